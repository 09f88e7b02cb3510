// The REST client: the only module that talks to the server.
//
// Every tool call names this browser tab's evidence session (X-Evigraph-Session, a random id kept
// in sessionStorage), so the [n] the page shows are numbers of one session, as an agent's are; and
// the knowledge base chosen in the picker (X-Evigraph-Db) when the server serves several.

const SESSION_KEY = "evigraph.session";
const TOKEN_KEY = "evigraph.token";

/** A refusal or failure the server answered with: its one-line error and, when given, the hint. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error || `HTTP ${status}`);
    this.status = status;
    this.hint = body?.hint || null;
    this.kind = body?.kind || null;
    this.available = body?.available || null;
  }
}

/** A random id; getRandomValues works on plain http too, where randomUUID may not exist. */
function randomId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function sessionId() {
  let id = sessionStorage.getItem(SESSION_KEY);
  if (!id) {
    id = randomId();
    sessionStorage.setItem(SESSION_KEY, id);
  }
  return id;
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

class Api {
  constructor() {
    this.session = sessionId();
    this.db = null; // the knowledge base name, once the picker has chosen one
  }

  headers(extra = {}) {
    const headers = { "X-Evigraph-Session": this.session, ...extra };
    if (this.db) headers["X-Evigraph-Db"] = this.db;
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }

  async request(method, path, { body, accept = "application/json" } = {}) {
    const init = { method, headers: this.headers({ Accept: accept }) };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(`api/${path}`, init);
    } catch (err) {
      throw new ApiError(0, { error: "the server cannot be reached", hint: "is evigraph serve still running?" });
    }
    if (!response.ok) {
      let detail = null;
      try {
        detail = await response.json();
      } catch {
        detail = { error: `HTTP ${response.status} ${response.statusText}` };
      }
      throw new ApiError(response.status, detail);
    }
    return accept === "text/plain" ? response.text() : response.json();
  }

  health() {
    return this.request("GET", "health");
  }

  dbs() {
    return this.request("GET", "dbs");
  }

  tools() {
    return this.request("GET", "tools");
  }

  /** A tool's structured result (the JSON an MCP client gets as structured content). */
  call(name, args = {}) {
    return this.request("POST", `tools/${encodeURIComponent(name)}`, { body: args });
  }

  /** A tool's reply as text: what the server renders for an LLM (`Accept: text/plain`). */
  text(name, args = {}) {
    return this.request("POST", `tools/${encodeURIComponent(name)}`, { body: args, accept: "text/plain" });
  }
}

export const api = new Api();
