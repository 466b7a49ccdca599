// The web chat's groundwork, loaded first: DOM helpers, the page's state, the API client (the
// user's auth token in a header, never the API key), the configured copy, toasts.
'use strict';

const $ = (selector) => document.querySelector(selector);
const el = (tag, attributes = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
};

const state = {
  token: sessionStorage.getItem('perch.token'),
  me: JSON.parse(sessionStorage.getItem('perch.me') || 'null'),
  ui: null, // { threadSubscription, strings, features, limits }
  users: new Map(), // uid -> user
  groups: new Map(), // guid -> group
  conversation: null, // { kind: 'group'|'user', id, name }
  view: null, // the open view instead of a conversation: 'threads', 'saved' or 'preferences'
  messages: new Map(), // id -> message (the open conversation's top level)
  scope: null, // the signed-in user's scope in the open group
  members: [], // the open conversation's people, for mentions
  thread: null, // the open thread's parent message
  threadReplies: [],
  quote: null, // the message being quote-replied to
  editing: null, // the signed-in person's own message being edited in the composer
  subscriptions: new Map(), // parentMessageId -> true/false, learned from fetches and toggles
  inFlight: new Set(), // parentMessageIds with a subscription request in flight
  quoteReplies: new Map(), // quoted id -> Set of live quote reply ids
  pinned: [],
  session: null,
  counted: new Set(), // thread reply ids already counted in their parent's replyCount
};

// ---------- API ----------

class APIError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

async function api(method, path, body, extraHeaders = {}) {
  const headers = { ...extraHeaders };
  if (state.token) headers.authtoken = state.token;
  if (state.session) headers['X-Perch-Session'] = state.session;
  let payload = body;
  if (body !== undefined && !(body instanceof Blob)) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload });
  } catch (error) {
    throw new APIError(0, 'ERR_OFFLINE', 'The server cannot be reached.', {});
  }
  const text = await response.text();
  const json = text ? JSON.parse(text) : {};
  if (!response.ok) {
    const error = json.error || {};
    throw new APIError(response.status, error.code || 'ERR_HTTP', error.message || response.statusText, error.details);
  }
  return json;
}

const copy = (key) => (state.ui && state.ui.strings[key]) || key;

// Every row of a list the server pages (`meta.next`): an operator may raise the pin or save limit
// past one page. At most 50 pages.
async function everyPage(path) {
  let rows = [];
  let next = '';
  for (let page = 0; page < 50; page++) {
    const answer = await api('GET', path + next);
    rows = rows.concat(answer.data);
    const more = answer.meta && answer.meta.hasMore && answer.meta.next;
    if (!more) break;
    next = `&id=${more.id}&affix=append`;
  }
  return rows;
}

// ---------- toasts ----------

let toastTimer = null;
function toast(text) {
  const node = $('#toast');
  node.textContent = text;
  node.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { node.hidden = true; }, 4000);
}

function describe(error) {
  if (error.details && error.details.limit !== undefined) return `${error.message} (limit ${error.details.limit})`;
  return error.message;
}
