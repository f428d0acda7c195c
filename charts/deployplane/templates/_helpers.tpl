{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "deployplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart, or the release name when it contains the chart name. */}}
{{- define "deployplane.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "deployplane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "deployplane.commonLabels" -}}
helm.sh/chart: {{ include "deployplane.chart" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: deployplane
{{- end }}

{{- define "deployplane.labels" -}}
{{ include "deployplane.commonLabels" . }}
{{ include "deployplane.selectorLabels" . }}
{{- end }}

{{- define "deployplane.emulatorLabels" -}}
{{ include "deployplane.commonLabels" . }}
{{ include "deployplane.emulatorSelectorLabels" . }}
{{- end }}

{{- define "deployplane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "deployplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "deployplane.emulatorSelectorLabels" -}}
app.kubernetes.io/name: {{ include "deployplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: emulator
{{- end }}

{{- define "deployplane.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "deployplane.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "deployplane.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "deployplane.emulatorImage" -}}
{{- $repo := default .Values.image.repository .Values.emulator.image.repository }}
{{- $tag := default (default .Chart.AppVersion .Values.image.tag) .Values.emulator.image.tag }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}

{{/* Peering is on from two replicas: Kopf then keeps exactly one operator active. */}}
{{- define "deployplane.peering" -}}
{{- if ge (int .Values.replicaCount) 2 }}true{{ end }}
{{- end }}

{{- define "deployplane.peeringName" -}}
{{- default (include "deployplane.fullname" .) .Values.peering.name }}
{{- end }}

{{/* An instance's name: the release fullname, "-shard-<name>" for a shard's. (list root shard) */}}
{{- define "deployplane.instanceName" -}}
{{- $root := index . 0 }}{{ $shard := index . 1 -}}
{{- include "deployplane.fullname" $root }}{{ if $shard }}-shard-{{ $shard }}{{ end }}
{{- end }}

{{/* An instance's Kopf peering object: each shard has its own. (list root shard) */}}
{{- define "deployplane.instancePeeringName" -}}
{{- $root := index . 0 }}{{ $shard := index . 1 -}}
{{- include "deployplane.peeringName" $root }}{{ if $shard }}-shard-{{ $shard }}{{ end }}
{{- end }}

{{/* The label that tells a shard's Deployment, pods and PDB apart (none for the default). */}}
{{- define "deployplane.shardLabel" -}}
{{- if . }}deployplane.io/shard: {{ . | quote }}{{ end }}
{{- end }}

{{/* The control-plane URL the operator uses by default. */}}
{{- define "deployplane.controlPlaneURL" -}}
{{- if .Values.controlPlane.url }}
{{- .Values.controlPlane.url }}
{{- else if .Values.emulator.enabled }}
{{- printf "http://%s-emulator.%s.svc:%d" (include "deployplane.fullname" .) .Release.Namespace (int .Values.emulator.port) }}
{{- end }}
{{- end }}

{{/* The Secret holding the API key: the user's, or the one generated for the emulator. */}}
{{- define "deployplane.apiKeySecretName" -}}
{{- if .Values.controlPlane.apiKeySecret.name }}
{{- .Values.controlPlane.apiKeySecret.name }}
{{- else if .Values.emulator.enabled }}
{{- printf "%s-emulator-api-key" (include "deployplane.fullname" .) }}
{{- end }}
{{- end }}

{{- define "deployplane.apiKeySecretKey" -}}
{{- default "api-key" .Values.controlPlane.apiKeySecret.key }}
{{- end }}
