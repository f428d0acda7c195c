-- Argo CD health check for every deployplane.io kind (AgentDeployment, Listener,
-- ControlPlaneConnection).
--
-- Install it in argocd-cm once per kind, as
-- resource.customizations.health.deployplane.io_<Kind> (docs/gitops.md); the dev
-- cluster's Argo CD (deployplane dev cluster up --gitops) installs it from this file.
-- Written for Lua 5.1 (Argo CD runs gopher-lua); `obj` is the live object.
--
-- It reads the kstatus conditions the operator writes (Ready and Synced always,
-- Reconciling and Stalled only while True; each with reason, message and
-- observedGeneration):
--   Degraded     Stalled=True, or Synced=False for a terminal reason (InvalidSpec,
--                Conflict, NotFound, Unauthorized, Forbidden, *Failed)
--   Progressing  status not yet observed for the current generation, Reconciling=True,
--                or not Ready yet for any other (retryable) reason
--   Healthy      only Ready=True observed for the current metadata.generation
--   Suspended    the deployplane.io/paused annotation is "true"; or a change waits for
--                approval (updatePolicy Manual: Synced=False AwaitingApproval, for the
--                current generation), until `deployplane approve` sends it
--   Progressing  being deleted (deletionTimestamp set), like Argo CD's own scripts and
--                kstatus's Terminating: the finalizer is deleting the remote resource

local TERMINAL_REASONS = {
  InvalidSpec = true,
  Conflict = true,
  NotFound = true,
  Unauthorized = true,
  Forbidden = true,
}

local function is_terminal(reason)
  if reason == nil then
    return false
  end
  if TERMINAL_REASONS[reason] then
    return true
  end
  -- CreateFailed, BuildFailed, DeployFailed and any later *Failed reason.
  return string.len(reason) > 6 and string.sub(reason, -6) == "Failed"
end

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
  if synced ~= nil and synced.status == "False" and synced.reason == "AwaitingApproval" then
    return "Suspended", describe(synced)
  end

  local stalled = find_condition(status, "Stalled")
  if stalled ~= nil and stalled.status == "True" then
    return "Degraded", describe(stalled)
  end

  if synced ~= nil and synced.status == "False" and is_terminal(synced.reason) then
    return "Degraded", describe(synced)
  end

  local reconciling = find_condition(status, "Reconciling")
  if reconciling ~= nil and reconciling.status == "True" then
    if synced ~= nil and synced.status == "False" then
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
  if synced ~= nil and synced.status == "False" then
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
