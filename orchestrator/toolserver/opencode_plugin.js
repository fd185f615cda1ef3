// termsprawl's OpenCode plugin, written by termsprawl into its own config
// directory (<state>/agent-tools/opencode, OPENCODE_CONFIG_DIR) and never
// into the user's. It turns OpenCode's events into `termsprawlctl hook
// opencode EVENT` calls with Claude Code's hook JSON (the hook speaks it
// already): states with evidence, the conversation id for a restore, and
// permission requests as termsprawl dialogs whose answer it gives OpenCode.
import { spawn } from "node:child_process"

const CTL = __TERMSPRAWL_CTL__

// hook runs the hook with the JSON on stdin: {code, out, err}.
function hook(event, payload, track) {
  return new Promise((resolve) => {
    let out = "", err = ""
    let p
    try {
      p = spawn(CTL, ["hook", "opencode", event], { stdio: ["pipe", "pipe", "pipe"] })
    } catch (e) {
      resolve({ code: -1, out, err: String(e) })
      return
    }
    if (track) track(p)
    p.stdout.on("data", (d) => { if (out.length < 65536) out += d })
    p.stderr.on("data", (d) => { if (err.length < 65536) err += d })
    p.on("error", (e) => resolve({ code: -1, out, err: String(e) }))
    p.on("close", (code) => resolve({ code, out, err }))
    p.stdin.on("error", () => {})
    p.stdin.end(JSON.stringify({ hook_event_name: event, ...payload }))
  })
}

// decision reads the hook's answer (Claude Code's PermissionRequest
// output): allow, or a reject with the reason. Anything else rejects.
function decision(r) {
  if (r.code === 0) {
    try {
      const d = JSON.parse(r.out).hookSpecificOutput.decision
      if (d.behavior === "allow") return { reply: "once" }
      return { reply: "reject", message: String(d.message || "denied in termsprawl") }
    } catch (e) {}
  }
  return { reply: "reject", message: (r.err || "termsprawl could not ask a human").trim().slice(0, 2000) }
}

export const Termsprawl = async ({ client, serverUrl }) => {
  const children = new Set() // sessions of subagents: not the node's turn
  const failed = new Set() // sessions whose turn ended in an error
  const busy = new Set() // sessions whose turn was reported working
  const retrying = new Set() // sessions OpenCode retries after an API error
  const asking = new Map() // permission id -> the hook's process
  // States are reported one after another, in the order of the events.
  let queue = Promise.resolve()
  const report = (event, id, extra) => {
    queue = queue.then(() => hook(event, { session_id: id, ...extra }))
    return queue
  }
  // ask opens the dialog and answers OpenCode; not awaited by the event
  // handler, so that OpenCode's other events (permission.replied, the
  // turn's states) go on arriving while a human thinks.
  const ask = async (p, sid) => {
    const input = { permission: p.permission, patterns: p.patterns || [] }
    if (typeof p.metadata?.command === "string") input.command = p.metadata.command
    if (typeof p.metadata?.filepath === "string") input.file_path = p.metadata.filepath
    const r = await hook("PermissionRequest", { session_id: sid, tool_name: p.permission, tool_input: input },
      (child) => asking.set(p.id, child))
    const mine = asking.has(p.id)
    asking.delete(p.id)
    if (!mine) return // answered in OpenCode's own window
    await reply(p.id, decision(r))
  }
  // reply answers permission request id (OpenCode's POST
  // /permission/{requestID}/reply, through the plugin's own client, which
  // reaches the server in process).
  const reply = async (id, answer) => {
    try {
      const r = await client._client.post({
        url: "/permission/{requestID}/reply", path: { requestID: id }, body: answer,
        headers: { "Content-Type": "application/json" },
      })
      if (r?.response?.ok) return
    } catch (e) {}
    if (serverUrl) {
      await fetch(new URL(`permission/${encodeURIComponent(id)}/reply`, serverUrl), {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(answer),
      }).catch(() => {})
    }
  }
  report("SessionStart", undefined, { message: "OpenCode started" })
  return {
    event: async ({ event }) => {
      const p = event.properties || {}
      const sid = p.sessionID || p.info?.id
      switch (event.type) {
        case "session.created":
          if (p.info?.parentID) children.add(p.info.id)
          return
      }
      if (sid && children.has(sid)) return
      switch (event.type) {
        case "session.status": {
          const t = p.status?.type
          if (t === "retry") {
            // An API error OpenCode retries (HTTP 5xx), again and again:
            // error once, until the turn ends or a retry succeeds.
            if (!retrying.has(sid)) {
              retrying.add(sid)
              await report("StopFailure", sid, { error: `OpenCode is retrying after an API error (attempt ${p.status.attempt}): ${p.status.message}` })
            }
          } else if (t === "busy" && !busy.has(sid) && !retrying.has(sid)) {
            busy.add(sid)
            await report("UserPromptSubmit", sid, { prompt: "(OpenCode session.status busy)" })
          }
          return
        }
        case "session.error": {
          busy.delete(sid)
          retrying.delete(sid)
          const e = p.error || {}
          if (e.name === "MessageAbortedError") {
            await report("Stop", sid, { message: "interrupted (OpenCode session.error MessageAbortedError)" })
          } else {
            failed.add(sid)
            await report("StopFailure", sid, { error: `${e.name || "error"}: ${e.data?.message || ""}` })
          }
          return
        }
        case "session.idle":
          busy.delete(sid)
          retrying.delete(sid)
          if (failed.delete(sid)) return // its error stands
          await report("Stop", sid, { message: "OpenCode session.idle" })
          return
        case "permission.asked":
          ask(p, sid).catch(() => {})
          return
        case "permission.replied": {
          const id = p.requestID || p.permissionID || p.id
          const child = asking.get(id)
          if (child) {
            asking.delete(id)
            child.kill("SIGTERM")
          }
          return
        }
      }
    },
  }
}
