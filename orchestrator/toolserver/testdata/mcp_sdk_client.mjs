// Drives termsprawl's /mcp with the official TypeScript SDK's
// StreamableHTTPClientTransport (TestMCPHTTPWithTypeScriptSDK runs it).
// Input: env MCP_URL, OP_TOKEN (the operator's), and lines on stdin
// answering the "waiting" steps. Output: one JSON object per line,
// {"step":…, …}; the last one is {"step":"done"}. Any failure prints
// {"step":"error",…} and exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import readline from "node:readline";

const url = new URL(process.env.MCP_URL);
const opToken = process.env.OP_TOKEN;
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const waitFor = async (step, extra = {}) => {
  out({ step, waiting: true, ...extra });
  const { value } = await lines.next();
  return value;
};

function transport(token, headers = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return new StreamableHTTPClientTransport(url, { requestInit: { headers: h } });
}

async function connect(token, headers) {
  const t = transport(token, headers);
  const c = new Client({ name: "termsprawl-sdk-test", version: "1.0.0" });
  await c.connect(t);
  return { c, t };
}

// expectFailure runs fn and returns the HTTP status the SDK reports.
async function expectFailure(step, fn) {
  try {
    await fn();
  } catch (e) {
    const status = e.code ?? null;
    out({ step, failed: true, status, message: String(e.message).slice(0, 300) });
    return;
  }
  throw new Error(`${step}: succeeded, but it must fail`);
}

function value(result) {
  const text = result.content.find((b) => b.type === "text").text;
  return JSON.parse(text);
}

async function main() {
  // 401 without a bearer token; 403 with a foreign Origin.
  await expectFailure("no_bearer", () => connect(""));
  await expectFailure("origin", () => connect(opToken, { Origin: "https://evil.example" }));

  // initialize and list.
  const { c, t } = await connect(opToken);
  out({ step: "initialize", server: c.getServerVersion(), protocol: t.protocolVersion ?? null,
        instructions: (c.getInstructions() ?? "").length, session: t.sessionId });
  const { tools } = await c.listTools();
  out({ step: "list", count: tools.length, withOutputSchema: tools.filter((x) => x.outputSchema).length,
        names: tools.map((x) => x.name) });

  // launch → submit (with a wait) → snapshot → close. The SDK checks
  // every structuredContent against the tool's outputSchema itself.
  const launch = await c.callTool({ name: "terminal_launch", arguments: { command: ["bash", "--norc", "--noprofile"], name: "sdk" } });
  if (launch.isError) throw new Error("launch: " + JSON.stringify(value(launch)));
  const node = launch.structuredContent.result.terminal;
  out({ step: "launch", node, structured: launch.structuredContent });
  const submit = await c.callTool({ name: "terminal_submit", arguments: {
    terminal: node, text: "echo sdk-$((6*7))", wait: { wait: "text", text: "sdk-42", timeout_ms: 20000 } } });
  out({ step: "submit", isError: submit.isError ?? false, structured: submit.structuredContent });
  const snap = await c.callTool({ name: "terminal_snapshot", arguments: { terminal: node } });
  out({ step: "snapshot", isError: snap.isError ?? false, structured: snap.structuredContent });

  // Node identity from the bearer: the launched node's own token.
  const nodeToken = await waitFor("node_token", { node });
  const { c: nc, t: nt } = await connect(nodeToken);
  const who = await nc.callTool({ name: "session_info", arguments: {} });
  out({ step: "identity", structured: who.structuredContent });
  await nt.terminateSession();
  await nc.close();

  // Progress during a 12 s wait (notifications at least every 5 s).
  const progress = [];
  const waited = await c.callTool(
    { name: "terminal_wait_for", arguments: { terminal: node, wait: "text", text: "never-appears", timeout_ms: 12000 } },
    undefined,
    { onprogress: (p) => progress.push(p), timeout: 30000 });
  out({ step: "progress", count: progress.length, progress, isError: waited.isError ?? false, result: value(waited) });

  const closed = await c.callTool({ name: "terminal_close", arguments: { terminal: node } });
  out({ step: "close", isError: closed.isError ?? false, structured: closed.structuredContent });

  // 16 sessions per token: this one and 15 more; the 17th is refused.
  const more = [];
  for (let i = 0; i < 15; i++) more.push(await connect(opToken));
  await expectFailure("seventeenth", () => connect(opToken));

  // DELETE ends a session: its id answers 404 afterwards, and there is
  // room for a new one.
  const gone = more.pop();
  const goneID = gone.t.sessionId;
  await gone.t.terminateSession();
  const after = await fetch(url, { method: "POST", headers: {
    Authorization: `Bearer ${opToken}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    "Mcp-Session-Id": goneID, "Mcp-Protocol-Version": t.protocolVersion ?? "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "ping" }) });
  out({ step: "delete", status: after.status });
  more.push(await connect(opToken));
  out({ step: "room_again" });

  // Expiry: hosts that went away without DELETE (their event streams
  // closed) leave sessions behind; the test moves the server's clock by
  // 10 minutes. This client still listens, so its session stays.
  const idleIDs = more.map((m) => m.t.sessionId);
  for (const m of more) await m.c.close();
  await waitFor("expire", { sessions: idleIDs });
  const expired = await fetch(url, { method: "POST", headers: {
    Authorization: `Bearer ${opToken}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    "Mcp-Session-Id": idleIDs[0], "Mcp-Protocol-Version": t.protocolVersion ?? "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 100, method: "ping" }) });
  out({ step: "expired", status: expired.status, message: (await expired.text()).slice(0, 300) });
  const still = await c.listTools();
  out({ step: "alive", count: still.tools.length });
  await t.terminateSession();
  await c.close();
  out({ step: "done" });
  process.exit(0);
}

main().catch((e) => {
  out({ step: "error", message: String(e && e.stack ? e.stack : e) });
  process.exit(1);
});
