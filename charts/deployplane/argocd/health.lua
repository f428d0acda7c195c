-- Argo CD health check for every deployplane.io kind (AgentDeployment, Listener,
-- ControlPlaneConnection).
--
-- Install it in argocd-cm once per kind, as
-- resource.customizations.health.deployplane.io_<Kind> (docs/gitops.md); the dev
-- cluster's Argo CD (deployplane dev cluster up --gitops) installs it from this file.
-- `obj` is the live object.
--
-- Argo CD runs a configured health script in gopher-lua (Lua 5.1) with only the base,
-- table and package libraries open: `string` is nil there, and so are string methods
-- ("x"):len(). This script uses nothing else; the unit tier runs it with Argo CD's own
-- binary (tests/unit/charts/test_argocd_health.py).
--
-- It reads the kstatus conditions the operator writes (Ready and Synced always,
-- Reconciling and Stalled only while True; each with reason, message and
-- observedGeneration), first rule that matches:
--   Progressing  being deleted (deletionTimestamp set), like Argo CD's own scripts and
--                kstatus's Terminating: the finalizer is deleting the remote resource
--   Suspended    the deployplane.io/paused annotation is "true"
--   Progressing  status not yet observed for the current generation
--   (table)      Synced=False for a reason of SYNCED_FALSE below
--   Degraded     Stalled=True
--   Progressing  Reconciling=True, or not Ready yet for any other (retryable) reason
--   Healthy      only Ready=True observed for the current metadata.generation

-- Synced=False reasons that decide the health on their own, one row each: a change that
-- waits for approval (updatePolicy Manual, until `deployplane approve` sends it), the
-- terminal ones (only a change of spec or of the world fixes them) and every *Failed
-- reason the operator gives. Any other Synced=False reason is retried by the operator:
-- Progressing.
local SYNCED_FALSE = {
  AwaitingApproval = "Suspended",
  InvalidSpec = "Degraded",
  Conflict = "Degraded",
  NotFound = "Degraded",
  Unauthorized = "Degraded",
  Forbidden = "Degraded",
  CreateFailed = "Degraded",
  BuildFailed = "Degraded",
  DeployFailed = "Degraded",
  ConfigMapWriteFailed = "Degraded",
}

local function find_condition(status, type_)
  if status == nil or status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == type_ then
      return c
    end
  end
  return nil
end

local function describe(c)
  local reason = c.reason or c.type
  if c.message ~= nil and c.message ~= "" then
    return reason .. ": " .. c.message
  end
  return reason
end

local function health(o)
  local meta = o.metadata or {}
  local generation = meta.generation
  local status = o.status

  if meta.deletionTimestamp ~= nil then
    return "Progressing", "Pending deletion"
  end

  if meta.annotations ~= nil and meta.annotations["deployplane.io/paused"] == "true" then
    return "Suspended", "Reconciling is paused (annotation deployplane.io/paused)"
  end

  if status == nil or status.observedGeneration == nil
      or (generation ~= nil and status.observedGeneration ~= generation) then
    return "Progressing", "Waiting for the operator to observe generation " .. tostring(generation)
  end

  local synced = find_condition(status, "Synced")
  local unsynced = synced ~= nil and synced.status == "False"
  if unsynced and synced.reason ~= nil and SYNCED_FALSE[synced.reason] ~= nil then
    return SYNCED_FALSE[synced.reason], describe(synced)
  end

  local stalled = find_condition(status, "Stalled")
  if stalled ~= nil and stalled.status == "True" then
    return "Degraded", describe(stalled)
  end

  local reconciling = find_condition(status, "Reconciling")
  if reconciling ~= nil and reconciling.status == "True" then
    if unsynced then
      return "Progressing", describe(synced)
    end
    return "Progressing", describe(reconciling)
  end

  local ready = find_condition(status, "Ready")
  if ready ~= nil and ready.status == "True" then
    if generation == nil or ready.observedGeneration == generation then
      return "Healthy", describe(ready)
    end
    return "Progressing", "Ready was observed for an earlier generation"
  end
  if unsynced then
    return "Progressing", describe(synced)
  end
  if ready ~= nil then
    return "Progressing", describe(ready)
  end
  return "Progressing", "Waiting for the Ready condition"
end

local hs = {}
hs.status, hs.message = health(obj)
return hs
