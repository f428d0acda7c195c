// kstatus prints the status that Flux's kstatus library computes for one Kubernetes
// object: the object as JSON on stdin, one JSON line on stdout,
// {"status": "Current|InProgress|Failed|Terminating|...", "message": "..."}.
//
// Why a binary: Flux (kustomize-controller health checks, `flux` CLI) judges custom
// resources with github.com/fluxcd/cli-utils/pkg/kstatus/status; the end-to-end tests
// feed it live AgentDeployments so the README's "Flux needs nothing" is Flux's own
// verdict, not our reading of the kstatus conventions.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	// The apimachinery decoder, as the apiserver's clients use: numbers become int64
	// (metadata.generation), not encoding/json's float64.
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		fail("stdin is not a Kubernetes object in JSON: %v", err)
	}
	result, err := status.Compute(obj)
	if err != nil {
		fail("%v", err)
	}
	out, _ := json.Marshal(verdict{Status: result.Status.String(), Message: result.Message})
	fmt.Println(string(out))
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kstatus: "+format+"\n", args...)
	os.Exit(2)
}
