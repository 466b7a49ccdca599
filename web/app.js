// Perch web chat: plain JavaScript over Perch's HTTP API, no build step, nothing fetched from the
// internet. It signs in with a user's auth token (development sign-in), never with the API key.
// The thread subscription surfaces and quote replies are implemented here; see docs/web-chat.md
// for every rule and where it lives.
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

// ---------- the thread subscription event bus ----------
// Listeners are keyed by id; registering a duplicate id evicts the previous listener. Emitted only
// after the server accepted a change, so every surface shows what the server holds.
const threadEvents = {
  listeners: new Map(),
  add(id, listener) { this.listeners.set(id, listener); },
  remove(id) { this.listeners.delete(id); },
  emit(parentMessageId, isSubscribed) {
    for (const listener of [...this.listeners.values()]) listener({ parentMessageId, isSubscribed });
  },
};
window.perchThreadEvents = threadEvents; // for plugin pages and tests

const gate = () => state.ui.threadSubscription.enabled;
const showOption = () => gate() && !state.ui.threadSubscription.hideOption;
const showTopBell = () => gate() && !state.ui.threadSubscription.hideButton && state.ui.threadSubscription.topBarBell;
const showFallbackBell = () => gate() && !state.ui.threadSubscription.hideButton && !showTopBell();

// Unknown renders as not subscribed (an enabled Subscribe), never a spinner.
const isSubscribed = (id) => state.subscriptions.get(id) === true;

function learnSubscription(message) {
  // Live payloads report threadSubscribed as false ("not reported"): only fetches teach it.
  if (message && message.parentMessageId === 0 && message.fromFetch) {
    state.subscriptions.set(message.id, message.threadSubscribed === true);
  }
}

// Optimistic, one request in flight per thread, reverted on failure; nothing queued offline.
async function toggleSubscription(parentId) {
  if (!gate() || state.inFlight.has(parentId)) return;
  const before = isSubscribed(parentId);
  const after = !before;
  state.inFlight.add(parentId);
  state.subscriptions.set(parentId, after);
  renderSubscriptionControls(parentId);
  try {
    if (!navigator.onLine) throw new APIError(0, 'ERR_OFFLINE', 'offline', {});
    await api(after ? 'POST' : 'DELETE', `/v3/messages/${parentId}/thread/subscription`);
    state.inFlight.delete(parentId);
    toast(copy(after ? 'THREAD_SUBSCRIBED_TOAST' : 'THREAD_UNSUBSCRIBED_TOAST'));
    threadEvents.emit(parentId, after);
  } catch (error) {
    state.inFlight.delete(parentId);
    state.subscriptions.set(parentId, before);
    renderSubscriptionControls(parentId);
    const gone = error.status === 403 || error.status === 404;
    toast(copy(gone ? 'THREAD_UNAVAILABLE' : 'THREAD_SUBSCRIPTION_FAILED'));
  }
}

function bell(parentId, testid) {
  const subscribed = isSubscribed(parentId);
  // THREAD_SUBSCRIBED is an accessible name only, never visible text.
  return el('button', {
    class: 'bell', type: 'button', 'data-testid': testid, 'data-parent': parentId,
    'aria-pressed': String(subscribed),
    'aria-label': subscribed ? copy('THREAD_SUBSCRIBED') : copy('THREAD_SUBSCRIBE'),
    title: subscribed ? copy('THREAD_UNSUBSCRIBE') : copy('THREAD_SUBSCRIBE'),
    onclick: () => toggleSubscription(parentId),
  }, bellIcon(subscribed));
}

// A bell drawn inline (no icon font or emoji needed): filled when subscribed, struck through when not.
function bellIcon(subscribed) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '18');
  svg.setAttribute('height', '18');
  svg.setAttribute('aria-hidden', 'true');
  svg.innerHTML = '<path d="M12 22a2 2 0 0 0 2-2h-4a2 2 0 0 0 2 2zm6-6V11a6 6 0 0 0-5-5.9V4a1 1 0 0 0-2 0v1.1A6 6 0 0 0 '
    + '6 11v5l-2 2v1h16v-1z" fill="' + (subscribed ? 'currentColor' : 'none') + '" stroke="currentColor" '
    + 'stroke-width="1.6"/>' + (subscribed ? '' : '<path d="M3 3l18 18" stroke="currentColor" stroke-width="1.8"/>');
  return svg;
}

function renderSubscriptionControls(parentId) {
  if (state.thread && state.thread.id === parentId) renderThreadChrome();
}

// The open thread panel keeps its bells in step with toggles made elsewhere (the action sheet).
threadEvents.add('thread-panel', ({ parentMessageId }) => renderSubscriptionControls(parentMessageId));

// ---------- sign-in ----------

async function start() {
  const settings = (await api('GET', '/v3/web/settings')).data;
  state.ui = settings.ui;
  if (state.token && state.me) {
    try {
      await api('GET', `/v3/users/${encodeURIComponent(state.me.uid)}`);
      return enterApp();
    } catch (error) {
      signOut(false);
    }
  }
  $('#signin').hidden = false;
  $('#signin-off').hidden = settings.devSignIn;
  const people = $('#people');
  people.replaceChildren(...settings.people.map((user) => el('button', {
    'data-testid': `signin-${user.uid}`,
    onclick: async () => {
      const signedIn = (await api('POST', '/v3/web/sign-in', { uid: user.uid })).data;
      state.token = signedIn.authToken;
      state.me = signedIn.user;
      sessionStorage.setItem('perch.token', state.token);
      sessionStorage.setItem('perch.me', JSON.stringify(state.me));
      $('#signin').hidden = true;
      enterApp();
    },
  }, `${user.name} (${user.uid})`)));
}

function signOut(reload = true) {
  sessionStorage.removeItem('perch.token');
  sessionStorage.removeItem('perch.me');
  state.token = null;
  state.me = null;
  if (reload) location.reload();
}

async function enterApp() {
  $('#app').hidden = false;
  $('#me-name').textContent = state.me.name;
  $('#sign-out').onclick = () => signOut();
  for (const button of document.querySelectorAll('[data-view]')) {
    button.onclick = () => openView(button.dataset.view);
  }
  const users = (await api('GET', '/v3/users?limit=100')).data;
  for (const user of users) state.users.set(user.uid, user);
  const groups = (await api('GET', '/v3/groups')).data;
  for (const group of groups) state.groups.set(group.guid, group);
  $('#groups').replaceChildren(...groups.map((group) => el('li', {}, el('button', {
    'data-testid': `conv-group-${group.guid}`, 'data-conv': `group:${group.guid}`,
    onclick: () => openConversation({ kind: 'group', id: group.guid, name: group.name }),
  }, `# ${group.name}`))));
  renderPeople();
  wireComposer();
  wireThreadComposer();
  document.addEventListener('click', (event) => {
    if (!$('#sheet').hidden && !event.target.closest('#sheet') && !event.target.closest('.more')) closeSheet();
  });
  $('#side-close').onclick = closeSide;
  $('#pins-toggle').onclick = openPins;
  $('#pin-banner').onclick = openPins;
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refreshFromServer(); });
  setInterval(refreshSettings, 30000);
  listen();
}

// The people one may talk to: everyone but oneself, and of the bots only those running now (a bot
// removed from bots/ leaves the list at the next reload).
function renderPeople() {
  const running = new Set(state.ui.bots || []);
  const people = [...state.users.values()].filter((user) => user.uid !== state.me.uid
    && (user.role !== 'bot' || running.has(user.uid)));
  $('#users').replaceChildren(...people.map((user) => el('li', {},
    el('button', {
      'data-testid': `conv-user-${user.uid}`, 'data-conv': `user:${user.uid}`,
      onclick: () => openConversation({ kind: 'user', id: user.uid, name: user.name }),
    }, `${user.name}${user.role === 'bot' ? ' (bot)' : ''}`))));
}

// The configuration's part of the page (the follow controls' switch and hide flags, the copy, the
// reply type, the running bots) as the server has it now: a reload (kill -HUP) reaches an open
// page within half a minute, or as soon as it is shown again.
async function refreshSettings() {
  let settings;
  try {
    settings = (await api('GET', '/v3/web/settings')).data;
  } catch (error) {
    return;
  }
  if (JSON.stringify(settings.ui) === JSON.stringify(state.ui)) return;
  state.ui = settings.ui;
  if (settings.ui.bots.some((uid) => !state.users.has(uid))) {
    for (const user of (await api('GET', '/v3/users?limit=100')).data) state.users.set(user.uid, user);
  }
  renderPeople();
  if (state.conversation) renderMessages();
  if (state.thread) renderThread();
  renderQuotePreview();
}

// Back on a hidden tab: the settings, and the open conversation's subscription states, fetched
// again (they may have changed while no event could say so).
async function refreshFromServer() {
  await refreshSettings();
  const conversation = state.conversation;
  if (!conversation) return;
  try {
    const page = await api('GET', `${conversationPath(conversation)}?limit=100&hideReplies=true`);
    if (conversation !== state.conversation) return;
    for (const message of page.data) {
      if (message.parentMessageId === 0 && !state.inFlight.has(message.id)) {
        state.subscriptions.set(message.id, message.threadSubscribed === true);
      }
    }
    if (state.thread) renderThreadChrome();
  } catch (error) {
    // Offline: what is shown stays.
  }
}

// ---------- live events (SSE over fetch, so the token travels in a header, not the URL) ----------

async function listen() {
  let lastEventId = null;
  // Attempts in a row that got no stream: the wait before the next doubles (1 s up to 30 s).
  let failures = 0;
  for (;;) {
    let wait = null;
    try {
      const headers = { authtoken: state.token, Accept: 'text/event-stream' };
      if (lastEventId) headers['Last-Event-ID'] = lastEventId;
      const response = await fetch('/v3/events', { headers });
      if (!response.ok) {
        await response.body?.cancel();
        // 503: the server's streams are full, or it is stopping; it says when to come back.
        const after = Number(response.headers.get('Retry-After'));
        if (after > 0) wait = after * 1000;
        throw new Error(`events: ${response.status}`);
      }
      failures = 0;
      // What was routed while no stream was open is in the list, not coming live.
      loadNotifications();
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = 'message';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
            else if (line.startsWith('id: ')) lastEventId = line.slice(4);
          }
          if (!data) continue;
          const payload = JSON.parse(data);
          if (name === 'perch.session') state.session = payload.session;
          else if (name === 'perch.gap') resync();
          else if (name === 'onNotification') onNotification(payload);
          else if (name === 'onNotificationsRead') onNotificationsRead(payload.read);
          else onEvent(name, payload);
        }
      }
    } catch (error) {
      failures += 1;
    }
    // Up to half again at random, so that the clients a restart or a full server turned away do
    // not all come back in the same second.
    const base = wait ?? Math.min(30000, 1000 * 2 ** Math.max(0, failures - 1));
    await new Promise((resolve) => setTimeout(resolve, base * (1 + Math.random() / 2)));
  }
}

// The stream resumed from before the start of the server's event log (this page was away for
// longer than its retention): what happened meanwhile is not coming live, so what the page shows is
// fetched again, as when it was first opened.
async function resync() {
  const thread = state.thread;
  if (state.conversation) await openConversation(state.conversation);
  else if (state.view) await openView(state.view);
  if (thread && state.conversation) await openThread(thread);
}

function inOpenConversation(message) {
  const conversation = state.conversation;
  if (!conversation || !message) return false;
  if (conversation.kind === 'group') return message.receiverType === 'group' && message.receiverUid === conversation.id;
  const pair = [message.sender, message.receiverUid];
  return message.receiverType === 'user' && pair.includes(conversation.id) && pair.includes(state.me.uid);
}

function onEvent(name, event) {
  const message = event.message;
  // The signed-in person's subscription changed elsewhere (another tab, a command, a reply).
  if (name === 'onThreadSubscribed' || name === 'onThreadUnsubscribed') {
    if (message && event.actor === state.me.uid && !state.inFlight.has(message.id)) {
      state.subscriptions.set(message.id, name === 'onThreadSubscribed');
      renderSubscriptionControls(message.id);
    }
    return;
  }
  if (!message) {
    if (state.conversation && state.conversation.kind === 'group' && event.member
        && event.member.guid === state.conversation.id) loadMembers();
    return;
  }
  if (name.endsWith('MessageReceived')) {
    trackQuote(message);
    if (!inOpenConversation(message)) return;
    if (message.parentMessageId !== 0) {
      const parent = state.messages.get(message.parentMessageId);
      if (parent && !state.counted.has(message.id)) {
        state.counted.add(message.id);
        parent.replyCount = Math.max(parent.replyCount, (parent.replyCount || 0) + 1);
        renderMessage(parent);
      }
      if (state.thread && state.thread.id === message.parentMessageId) {
        if (!state.threadReplies.some((reply) => reply.id === message.id)) state.threadReplies.push(message);
        state.thread.replyCount = state.threadReplies.length;
        renderThread();
      }
      return;
    }
    if (!state.messages.has(message.id)) {
      state.messages.set(message.id, message);
      $('#messages').append(messageNode(message));
      scrollToBottom();
    }
    return;
  }
  if (!inOpenConversation(message)) return;
  let known = state.messages.get(message.id) || (state.thread && state.thread.id === message.id ? state.thread : null);
  if (!known && message.sender === state.me.uid && message.parentMessageId === 0
      && message.id > Math.max(0, ...state.messages.keys())) {
    // One of our own messages, newer than any shown, changed (a bot pinned an announcement, say)
    // before the POST's answer showed it: this session gets no event for its own new messages, so
    // it shows it from here. (An older one that is not loaded stays out of the list.)
    state.messages.set(message.id, message);
    $('#messages').append(messageNode(message));
    scrollToBottom();
    known = message;
  }
  const update = (target) => {
    if (name === 'onMessagePinned' || name === 'onMessageUnpinned') {
      target.pinnedAt = message.pinnedAt;
      target.pinnedBy = message.pinnedBy;
    } else if (name === 'onMessageSaved' || name === 'onMessageUnsaved') {
      target.savedAt = name === 'onMessageSaved' ? (message.savedAt || 1) : 0;
    } else if (name === 'onMessageEdited') {
      target.text = message.text;
      target.editedAt = message.editedAt;
    } else if (name === 'onMessageDeleted') {
      target.deletedAt = message.deletedAt || 1;
      untrackQuote(target);
    } else if ((name === 'onMessageReactionAdded' || name === 'onMessageReactionRemoved') && event.reaction) {
      // The live counts say nothing of whose they are: reactedByMe stays as this page knew it,
      // but for the reaction the event is about when it is this user's.
      const before = new Map((target.reactions || []).map((count) => [count.reaction, count.reactedByMe]));
      target.reactions = (message.reactions || []).map((count) => ({
        ...count,
        reactedByMe: event.reaction.uid === state.me.uid && count.reaction === event.reaction.reaction
          ? name === 'onMessageReactionAdded' : Boolean(before.get(count.reaction)),
      }));
    }
  };
  if (known) {
    update(known);
    if (state.messages.has(known.id)) renderMessage(known);
    if (state.thread && state.thread.id === known.id) renderThread();
  }
  const reply = state.threadReplies.find((item) => item.id === message.id);
  if (reply) {
    update(reply);
    renderThread();
  }
  if (name === 'onMessagePinned' || name === 'onMessageUnpinned') loadPins();
}

// The delete guard: a message with live quote replies cannot be deleted by its sender.
function trackQuote(message) {
  if (!message.quotedMessageId || message.deletedAt) return;
  if (!state.quoteReplies.has(message.quotedMessageId)) state.quoteReplies.set(message.quotedMessageId, new Set());
  state.quoteReplies.get(message.quotedMessageId).add(message.id);
  const quoted = state.messages.get(message.quotedMessageId);
  if (quoted) renderMessage(quoted);
}

function untrackQuote(message) {
  const set = state.quoteReplies.get(message.quotedMessageId);
  if (set) set.delete(message.id);
}

const hasQuoteReplies = (id) => (state.quoteReplies.get(id) || new Set()).size > 0;

// ---------- conversations ----------

function conversationPath(conversation = state.conversation) {
  return conversation.kind === 'group'
    ? `/v3/groups/${encodeURIComponent(conversation.id)}/messages`
    : `/v3/users/${encodeURIComponent(conversation.id)}/messages`;
}

async function openConversation(conversation) {
  state.conversation = conversation;
  state.view = null;
  state.messages = new Map();
  // Read off the messages fetched now, not remembered from earlier in the page's life.
  state.subscriptions = new Map();
  state.quote = null;
  if (state.editing) endEdit();
  renderQuotePreview();
  closeSide();
  $('#view').replaceChildren();
  $('#messages').hidden = false;
  $('#composer').hidden = false;
  $('#conv-title').textContent = conversation.kind === 'group' ? `# ${conversation.name}` : conversation.name;
  for (const button of document.querySelectorAll('.convs button')) {
    button.classList.toggle('active', button.dataset.conv === `${conversation.kind}:${conversation.id}`);
  }
  await loadMembers();
  try {
    const page = await api('GET', `${conversationPath()}?limit=100&hideReplies=true`);
    for (const message of page.data) {
      message.fromFetch = true;
      learnSubscription(message);
      trackQuote(message);
      state.messages.set(message.id, message);
    }
  } catch (error) {
    toast(describe(error));
  }
  renderMessages();
  loadPins();
  loadMute(conversation);
}

// CometChat's muted conversations: a muted one sends its user no notification (the outbox), a
// mention included; the messages themselves still arrive.
const muteType = (conversation) => (conversation.kind === 'group' ? 'group' : 'oneOnOne');

async function loadMute(conversation) {
  const button = $('#mute-toggle');
  button.hidden = true;
  let muted = false;
  try {
    const list = (await api('GET', '/v3/notifications/preferences/mute')).data.mutedConversations;
    muted = list.some((entry) => entry.type === muteType(conversation) && entry.id === conversation.id);
  } catch (error) {
    return;
  }
  if (state.conversation !== conversation) return;
  const show = (isMuted) => {
    button.textContent = isMuted ? 'Unmute' : 'Mute';
    button.setAttribute('aria-pressed', String(isMuted));
    button.title = isMuted ? 'Notifications of this conversation are off' : 'Turn off notifications of this conversation';
  };
  show(muted);
  button.hidden = false;
  button.onclick = async () => {
    const body = { conversations: [{ id: conversation.id, type: muteType(conversation) }] };
    try {
      await api(muted ? 'DELETE' : 'PUT', '/v3/notifications/preferences/mute', body);
      muted = !muted;
      show(muted);
      toast(muted ? 'Conversation muted.' : 'Conversation unmuted.');
    } catch (error) {
      toast(describe(error));
    }
  };
}

async function loadMembers() {
  const conversation = state.conversation;
  state.scope = null;
  if (conversation.kind === 'group') {
    try {
      const members = (await api('GET', `/v3/groups/${encodeURIComponent(conversation.id)}/members?limit=100`)).data;
      state.members = members.map((member) => ({ uid: member.uid, name: (state.users.get(member.uid) || member).name || member.uid }));
      const mine = members.find((member) => member.uid === state.me.uid);
      state.scope = mine ? mine.scope : null;
    } catch (error) {
      state.members = [];
    }
  } else {
    const other = state.users.get(conversation.id);
    state.members = [{ uid: conversation.id, name: other ? other.name : conversation.id }];
  }
}

// Pins: in a group only the owner, admins and moderators pin; one-on-one both people do.
function canPin() {
  if (!state.ui.features.pin) return false;
  if (state.conversation.kind === 'user') return true;
  return state.scope === 'admin' || state.scope === 'moderator' || state.scope === 'owner';
}

async function loadPins() {
  const conversation = state.conversation;
  if (!conversation || !state.ui.features.pin) return;
  try {
    state.pinned = await everyPage(`${conversationPath(conversation)}?pinned=true&limit=100`);
  } catch (error) {
    state.pinned = [];
  }
  if (conversation !== state.conversation) return;
  const newest = [...state.pinned].sort((a, b) => b.pinnedAt - a.pinnedAt)[0];
  const banner = $('#pin-banner');
  banner.hidden = !newest;
  $('#pins-toggle').hidden = !state.ui.features.pin;
  $('#pins-toggle').textContent = `Pinned (${state.pinned.length})`;
  if (newest) banner.textContent = `Pinned: ${senderName(newest.sender)}: ${plain(newest)}`;
}

function senderName(uid) {
  const user = state.users.get(uid);
  return user ? user.name : uid;
}

function plain(message) {
  if (message.deletedAt) return copy('MESSAGE_DELETED');
  if (message.attachments && message.attachments.length && !message.text) return `File: ${message.attachments[0].name}`;
  return (message.text || '').replace(/<@uid:([^>]+)>/g, (_, uid) => `@${senderName(uid)}`);
}

function richText(text) {
  const parts = [];
  let last = 0;
  const pattern = /<@uid:([^>]+)>/g;
  let match;
  while ((match = pattern.exec(text))) {
    parts.push(text.slice(last, match.index));
    parts.push(el('span', { class: 'mention', 'data-uid': match[1] }, `@${senderName(match[1])}`));
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

function renderMessages() {
  const list = $('#messages');
  const ordered = [...state.messages.values()].sort((a, b) => a.id - b.id);
  list.replaceChildren(...ordered.map(messageNode));
  scrollToBottom();
}

function scrollToBottom() {
  const list = $('#messages');
  list.scrollTop = list.scrollHeight;
}

function renderMessage(message) {
  const node = document.querySelector(`#messages [data-id="${message.id}"]`);
  if (node) node.replaceWith(messageNode(message));
}

function quotedBlock(message) {
  const quoted = message.quotedMessage || state.messages.get(message.quotedMessageId);
  const body = quoted ? plain(quoted) : `message #${message.quotedMessageId}`;
  const file = quoted && quoted.attachments && quoted.attachments.length ? quoted.attachments[0] : null;
  return el('div', {
    class: 'quoted', 'data-testid': 'quoted', 'data-quoted-id': message.quotedMessageId,
    title: 'Show the quoted message', onclick: () => scrollToMessage(message.quotedMessageId),
  }, el('span', { class: 'meta', 'data-testid': 'replied-to' },
    copy('QUOTE_REPLIED_TO').replace('{name}', quoted ? senderName(quoted.sender) : '…')), ' ',
  file ? `File: ${file.name}` : body);
}

// An attachment is an upload of this server (fetched with the auth token, which never leaves this
// origin) or an http(s) address elsewhere (opened as a plain link, without the token or this page
// as its opener). Anything else, which the server refuses to store, is shown as text only.
function attachmentNode(attachment) {
  let target = null;
  try { target = new URL(attachment.url, window.location.href); } catch (error) { target = null; }
  const label = `File: ${attachment.name}`;
  if (target && target.origin === window.location.origin && target.pathname.startsWith('/v3/media/')) {
    return el('a', {
      class: 'attachment', href: '#', 'data-testid': 'attachment',
      onclick: async (event) => {
        event.preventDefault();
        const response = await fetch(target.pathname, { headers: { authtoken: state.token } });
        const url = URL.createObjectURL(await response.blob());
        window.open(url, '_blank', 'noopener');
      },
    }, label);
  }
  if (target && (target.protocol === 'https:' || target.protocol === 'http:')) {
    return el('a', {
      class: 'attachment', href: target.href, target: '_blank', rel: 'noopener noreferrer',
      'data-testid': 'attachment',
    }, label);
  }
  return el('span', { class: 'attachment', 'data-testid': 'attachment' }, label);
}

function messageNode(message, options = {}) {
  if (message.category === 'action') {
    return el('li', { class: 'msg action', 'data-id': message.id }, message.text || '');
  }
  const mine = message.sender === state.me.uid;
  const node = el('li', {
    class: `msg${message.deletedAt ? ' deleted' : ''}`, 'data-id': message.id, 'data-testid': `message-${message.id}`,
    oncontextmenu: (event) => { event.preventDefault(); openSheet(message, event.clientX, event.clientY, options); },
  },
  el('div', {},
    el('span', { class: 'who' }, mine ? 'You' : senderName(message.sender)),
    el('span', { class: 'meta' }, new Date(message.sentAt * 1000).toLocaleTimeString()),
    message.editedAt && !message.deletedAt
      ? el('span', { class: 'meta', 'data-testid': 'edited-mark', title: new Date(message.editedAt * 1000).toLocaleString() },
        '(edited)')
      : null,
    message.pinnedAt ? el('span', { class: 'pinned-mark', 'data-testid': 'pinned-mark' }, 'pinned') : null,
    message.savedAt ? el('span', { class: 'pinned-mark', 'data-testid': 'saved-mark' }, 'saved') : null),
  message.quotedMessageId && !message.deletedAt ? quotedBlock(message) : null,
  el('div', { class: 'text' }, message.deletedAt ? copy('MESSAGE_DELETED') : richText(message.text || '')),
  ...(message.deletedAt ? [] : (message.attachments || []).map(attachmentNode)),
  message.deletedAt || !(message.reactions || []).length ? null : el('div', { class: 'reactions', 'data-testid': 'reactions' },
    ...message.reactions.map((count) => el('button', {
      class: `reaction${count.reactedByMe ? ' mine' : ''}`, 'data-testid': 'reaction', 'aria-pressed': String(count.reactedByMe),
      title: count.reactedByMe ? 'Take your reaction back' : 'React so too',
      onclick: () => toggleReaction(message, count.reaction),
    }, `${count.reaction} ${count.count}`))),
  !options.inThread && message.parentMessageId === 0 && message.replyCount > 0
    ? el('button', { class: 'replies', 'data-testid': 'reply-count', onclick: () => openThread(message) },
      `${message.replyCount} ${message.replyCount === 1 ? 'reply' : 'replies'}`)
    : null,
  message.deletedAt ? null : el('button', {
    class: 'more', 'aria-label': 'Message actions', 'data-testid': 'more',
    onclick: (event) => { const box = event.target.getBoundingClientRect(); openSheet(message, box.left - 160, box.bottom, options); },
  }, '⋯'));
  let pressTimer = null;
  node.addEventListener('touchstart', () => { pressTimer = setTimeout(() => openSheet(message, 20, 80, options), 500); });
  node.addEventListener('touchend', () => clearTimeout(pressTimer));
  return node;
}

// Scrolls to a message shown in `container` and highlights it; false when it is not there.
function highlightIn(container, id) {
  const node = document.querySelector(`${container} [data-id="${id}"]`);
  if (!node) return false;
  node.scrollIntoView({ block: 'center' });
  node.classList.add('highlight');
  setTimeout(() => node.classList.remove('highlight'), 2000);
  return true;
}

async function scrollToMessage(id) {
  // A quote inside the open thread points into the thread (its root or a reply).
  if (!$('#side').hidden && $('#side').dataset.mode === 'thread' && highlightIn('#side-body', id)) return;
  let node = document.querySelector(`#messages [data-id="${id}"]`);
  if (!node && state.conversation) {
    // Older than the loaded page: load back until it is there (a handful of pages at most).
    for (let attempt = 0; attempt < 10 && !node; attempt++) {
      const oldest = Math.min(...state.messages.keys());
      const page = await api('GET', `${conversationPath()}?limit=100&hideReplies=true&id=${oldest}&affix=prepend`);
      if (!page.data.length) break;
      for (const message of page.data) {
        message.fromFetch = true;
        learnSubscription(message);
        state.messages.set(message.id, message);
      }
      renderMessages();
      node = document.querySelector(`#messages [data-id="${id}"]`);
    }
  }
  if (!node) return toast('The quoted message is not in this conversation any more.');
  node.scrollIntoView({ block: 'center' });
  node.classList.add('highlight');
  setTimeout(() => node.classList.remove('highlight'), 2000);
}

// ---------- the action sheet ----------

function closeSheet() { $('#sheet').hidden = true; }

// The reactions the action sheet offers (Slack's defaults and two more); a chip under a message
// adds any reaction someone already made.
const QUICK_REACTIONS = ['👍', '🎉', '❤️', '😂', '👀', '✅'];

function openSheet(message, x, y, options = {}) {
  if (message.deletedAt || message.category === 'action') return;
  const mine = message.sender === state.me.uid;
  const items = [];
  const isParent = message.parentMessageId === 0;
  // The reaction bar first, as Sendbird's and Slack's menus have it: one click adds a reaction,
  // or takes back the viewer's own (pressed).
  items.push(el('div', { class: 'quick-reactions', role: 'group', 'aria-label': 'React' },
    ...QUICK_REACTIONS.map((reaction) => {
      const pressed = (message.reactions || []).some((count) => count.reaction === reaction && count.reactedByMe);
      return el('button', {
        role: 'menuitem', class: pressed ? 'mine' : null, 'data-testid': `react-${reaction}`,
        'aria-pressed': String(pressed), title: pressed ? `Take back ${reaction}` : `React ${reaction}`,
        onclick: () => { closeSheet(); toggleReaction(message, reaction); },
      }, reaction);
    })));
  // The message menu: the reaction bar, Copy and Reply.
  if (message.text) {
    items.push(el('button', {
      // The text as shown: a mention is copied as @Name, not as its <@uid:...> token.
      role: 'menuitem', 'data-testid': 'action-copy', onclick: () => { closeSheet(); copyText(plain(message)); },
    }, copy('MESSAGE_COPY')));
  }
  // Reply starts quote mode; disabled on a message that is itself a quote reply (one level deep).
  // `ui.replyType: NONE` offers none, as Sendbird's kit does.
  if (!options.inThread && state.ui.replyType !== 'NONE') {
    items.push(el('button', {
      role: 'menuitem', 'data-testid': 'action-reply', disabled: message.quotedMessageId !== 0,
      onclick: () => { closeSheet(); startQuote(message); },
    }, copy('MESSAGE_QUOTE_REPLY')));
  }
  // One's own text message, in the conversation's composer, as Slack and CometChat offer it.
  if (mine && !options.inThread && message.type === 'text' && message.category === 'message') {
    items.push(el('button', {
      role: 'menuitem', 'data-testid': 'action-edit', onclick: () => { closeSheet(); startEdit(message); },
    }, copy('MESSAGE_EDIT')));
  }
  if (isParent) {
    items.push(el('button', {
      role: 'menuitem', 'data-testid': 'action-thread', onclick: () => { closeSheet(); openThread(message); },
    }, copy('MESSAGE_REPLY_IN_THREAD')));
  }
  // The subscription option: on parent messages only, never a reply, whatever the reply count.
  if (isParent && showOption()) {
    const subscribed = isSubscribed(message.id);
    items.push(el('button', {
      role: 'menuitem', class: 'with-icon', 'data-testid': 'action-subscription', 'data-subscribed': String(subscribed),
      disabled: state.inFlight.has(message.id),
      onclick: () => { closeSheet(); toggleSubscription(message.id); },
    }, bellIcon(subscribed), copy(subscribed ? 'THREAD_UNSUBSCRIBE' : 'THREAD_SUBSCRIBE')));
  }
  if (canPin()) {
    items.push(el('button', {
      role: 'menuitem', 'data-testid': 'action-pin',
      onclick: () => { closeSheet(); pinToggle(message); },
    }, copy(message.pinnedAt ? 'MESSAGE_UNPIN' : 'MESSAGE_PIN')));
  }
  if (state.ui.features.save) {
    items.push(el('button', {
      role: 'menuitem', 'data-testid': 'action-save',
      onclick: () => { closeSheet(); saveToggle(message); },
    }, copy(message.savedAt ? 'MESSAGE_UNSAVE' : 'MESSAGE_SAVE')));
  }
  if (mine) {
    const remove = el('button', {
      role: 'menuitem', 'data-testid': 'action-delete', disabled: hasQuoteReplies(message.id),
      title: hasQuoteReplies(message.id) ? 'Delete its quote replies first' : null,
      onclick: () => { closeSheet(); deleteMessage(message); },
    }, copy('MESSAGE_DELETE'));
    items.push(remove);
    // Quote replies this page never loaded (in threads, or before it opened) count too: the
    // server says how many are left.
    if (!hasQuoteReplies(message.id)) {
      api('GET', `/v3/messages/${message.id}`).then((answer) => {
        if (answer.meta && answer.meta.quoteReplyCount > 0) {
          remove.disabled = true;
          remove.title = 'Delete its quote replies first';
        }
      }).catch(() => {});
    }
  }
  const sheet = $('#sheet');
  sheet.replaceChildren(...items);
  sheet.dataset.messageId = message.id;
  sheet.hidden = false;
  // Placed at the pointer, inside the window: measured once shown, as its width and height depend
  // on what it offers.
  sheet.style.left = `${Math.max(8, Math.min(x, window.innerWidth - sheet.offsetWidth - 8))}px`;
  sheet.style.top = `${Math.max(8, Math.min(y, window.innerHeight - sheet.offsetHeight - 8))}px`;
}

// The clipboard API needs a secure origin (https, or localhost); on plain http elsewhere the page
// falls back to the older copy command on a hidden text area.
async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
    } else {
      const area = el('textarea', { class: 'offscreen', 'aria-hidden': 'true' });
      area.value = text;
      document.body.append(area);
      area.select();
      const copied = document.execCommand('copy');
      area.remove();
      if (!copied) throw new Error('the browser refused to copy');
    }
    toast(copy('MESSAGE_COPIED'));
  } catch (error) {
    toast(`Could not copy: ${error.message || error}`);
  }
}

async function pinToggle(message) {
  try {
    const answer = await api(message.pinnedAt ? 'DELETE' : 'POST', `/v3/messages/${message.id}/pin`);
    Object.assign(message, { pinnedAt: answer.data.pinnedAt, pinnedBy: answer.data.pinnedBy });
    renderMessage(message);
    loadPins();
  } catch (error) {
    toast(describe(error));
  }
}

async function toggleReaction(message, reaction) {
  const mine = (message.reactions || []).some((count) => count.reaction === reaction && count.reactedByMe);
  try {
    const path = `/v3/messages/${message.id}/reactions/${encodeURIComponent(reaction)}`;
    const answer = await api(mine ? 'DELETE' : 'POST', path);
    message.reactions = answer.data.reactions || [];
    if (state.messages.has(message.id)) renderMessage(message);
    if (state.thread) renderThread();
  } catch (error) {
    toast(describe(error));
  }
}

async function saveToggle(message) {
  try {
    const answer = await api(message.savedAt ? 'DELETE' : 'POST', `/v3/messages/${message.id}/save`);
    message.savedAt = answer.data.savedAt || 0;
    renderMessage(message);
    if (state.thread) renderThread();
  } catch (error) {
    toast(describe(error));
  }
}

async function deleteMessage(message) {
  try {
    await api('DELETE', `/v3/messages/${message.id}`);
    message.deletedAt = Math.floor(Date.now() / 1000);
    untrackQuote(message);
    renderMessage(message);
    if (state.thread) renderThread();
  } catch (error) {
    toast(describe(error));
  }
}

// ---------- quote mode ----------

function startQuote(message) {
  if (state.editing) endEdit();
  state.quote = message;
  renderQuotePreview();
  $('#text').focus();
}

// Edit mode: the composer holds the message's text (its mentions as tokens, as the composer writes
// them), the preview says what is being edited, and Send saves the edit instead of sending.
function startEdit(message) {
  state.quote = null;
  state.editing = message;
  $('#text').value = message.text || '';
  renderQuotePreview();
  $('#text').focus();
}

function endEdit() {
  state.editing = null;
  $('#text').value = '';
  renderQuotePreview();
}

function renderQuotePreview() {
  const preview = $('#quote-preview');
  preview.hidden = !state.quote && !state.editing;
  $('#send').textContent = copy(state.editing ? 'MESSAGE_SAVE' : 'COMPOSER_SEND');
  $('#file').disabled = Boolean(state.editing);
  if (state.editing) {
    preview.querySelector('.close').setAttribute('aria-label', 'Stop editing');
    preview.querySelector('.quote-body').replaceChildren(el('strong', {}, copy('COMPOSER_EDITING')), el('br'),
      plain(state.editing));
    return;
  }
  preview.querySelector('.close').setAttribute('aria-label', 'Close the quote');
  if (!state.quote) return;
  const file = state.quote.attachments && state.quote.attachments.length ? state.quote.attachments[0] : null;
  preview.querySelector('.quote-body').replaceChildren(
    el('strong', {}, copy('COMPOSER_REPLYING_TO').replace('{name}', senderName(state.quote.sender))), el('br'),
    file ? `File: ${file.name}` : plain(state.quote));
}

function wireComposer() {
  $('#quote-preview .close').onclick = () => {
    if (state.editing) return endEdit();
    state.quote = null;
    renderQuotePreview();
  };
  $('#file').onchange = () => { $('#file-name').textContent = $('#file').files[0] ? $('#file').files[0].name : ''; };
  const text = $('#text');
  text.addEventListener('input', () => updateMentions(text));
  text.addEventListener('keydown', (event) => {
    const list = $('#mentions');
    if (!list.hidden && (event.key === 'Enter' || event.key === 'Tab')) {
      const chosen = list.querySelector('[aria-selected=true]') || list.firstElementChild;
      if (chosen) { event.preventDefault(); chosen.click(); }
      return;
    }
    if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('#composer').requestSubmit(); }
  });
  $('#composer').onsubmit = async (event) => {
    event.preventDefault();
    const body = text.value.trim();
    if (state.editing) return saveEdit(body);
    const file = $('#file').files[0];
    if (!body && !file) return;
    const draft = state.conversation.kind === 'group'
      ? { receiver: state.conversation.id, receiverType: 'group' }
      : { receiver: state.conversation.id, receiverType: 'user' };
    draft.category = 'message';
    try {
      if (file) {
        const uploaded = (await api('POST', `/v3/media?name=${encodeURIComponent(file.name)}`, file,
          { 'Content-Type': file.type || 'application/octet-stream' })).data;
        draft.type = (file.type || '').startsWith('image/') ? 'image' : 'file';
        draft.data = { attachments: [uploaded] };
        if (body) draft.data.text = body;
      } else {
        draft.type = 'text';
        draft.data = { text: body };
      }
      if (state.quote) draft.quotedMessageId = state.quote.id;
      const sent = (await api('POST', '/v3/messages', draft)).data;
      sent.fromFetch = true;
      learnSubscription(sent);
      trackQuote(sent);
      if (!state.messages.has(sent.id)) {
        state.messages.set(sent.id, sent);
        $('#messages').append(messageNode(sent));
      }
      scrollToBottom();
      text.value = '';
      $('#file').value = '';
      $('#file-name').textContent = '';
      state.quote = null;
      renderQuotePreview();
    } catch (error) {
      toast(describe(error));
    }
  };
}

async function saveEdit(body) {
  const message = state.editing;
  if (!body) return toast('A message needs text: delete it instead.');
  if (body === message.text) return endEdit();
  try {
    const edited = (await api('PUT', `/v3/messages/${message.id}`, { data: { text: body } })).data;
    // The list's own copy, which live events keep: a moderator may have deleted the edit already.
    const shown = state.messages.get(message.id) || message;
    if (!shown.deletedAt) {
      Object.assign(shown, { text: edited.text, editedAt: edited.editedAt, mentionedUids: edited.mentionedUids });
      renderMessage(shown);
    }
    endEdit();
  } catch (error) {
    toast(describe(error));
  }
}

// The composer's @-autocomplete: picking a person inserts the `<@uid:...>` token.
function updateMentions(text) {
  const list = $('#mentions');
  const before = text.value.slice(0, text.selectionStart);
  const match = /(^|\s)@([\w.-]*)$/.exec(before);
  if (!match) { list.hidden = true; return; }
  const prefix = match[2].toLowerCase();
  const candidates = state.members.filter((member) => member.uid !== state.me.uid
    && (member.uid.toLowerCase().startsWith(prefix) || (member.name || '').toLowerCase().startsWith(prefix))).slice(0, 8);
  if (!candidates.length) { list.hidden = true; return; }
  list.replaceChildren(...candidates.map((member, index) => el('li', {
    role: 'option', 'aria-selected': String(index === 0), 'data-testid': `mention-${member.uid}`,
    onmousedown: (event) => event.preventDefault(),
    onclick: () => {
      const start = before.length - match[2].length - 1;
      const token = `<@uid:${member.uid}> `;
      text.value = text.value.slice(0, start) + token + text.value.slice(text.selectionStart);
      text.selectionStart = text.selectionEnd = start + token.length;
      list.hidden = true;
      text.focus();
    },
  }, `${member.name} (${member.uid})`)));
  list.hidden = false;
}

// ---------- the thread panel ----------

function closeSide() {
  $('#side').hidden = true;
  $('#thread-composer').hidden = true;
  state.thread = null;
  state.threadReplies = [];
}

async function openThread(message) {
  try {
    const parent = (await api('GET', `/v3/messages/${message.id}`)).data;
    parent.fromFetch = true;
    learnSubscription(parent);
    const replies = (await api('GET', `/v3/messages/${message.id}/thread?limit=100`)).data;
    state.thread = parent;
    state.threadReplies = replies;
  } catch (error) {
    const gone = error.status === 403 || error.status === 404;
    return toast(gone ? copy('THREAD_UNAVAILABLE') : describe(error));
  }
  $('#side').hidden = false;
  $('#side').dataset.mode = 'thread';
  $('#thread-composer').hidden = false;
  renderThread();
}

function renderThreadChrome() {
  const parent = state.thread;
  $('#side-title').textContent = 'Thread';
  // The top-bar bell renders in thread mode only.
  $('#top-bell-slot').replaceChildren(...(showTopBell() ? [bell(parent.id, 'top-bell')] : []));
  const bar = document.querySelector('#side-body .reply-bar');
  if (bar) {
    const count = state.threadReplies.length;
    bar.replaceChildren(el('span', { 'data-testid': 'thread-reply-count' },
      `${count} ${count === 1 ? 'reply' : 'replies'}`),
    ...(showFallbackBell() ? [bell(parent.id, 'fallback-bell')] : []));
  }
}

function renderThread() {
  const parent = state.thread;
  if (!parent) return;
  const body = $('#side-body');
  body.replaceChildren(
    el('ol', { class: 'messages', 'data-testid': 'thread-parent' }, messageNode(parent, { inThread: true })),
    el('div', { class: 'reply-bar', 'data-testid': 'reply-bar' }),
    el('ol', { class: 'messages', 'data-testid': 'thread-replies' },
      ...state.threadReplies.map((reply) => messageNode(reply, { inThread: true }))));
  renderThreadChrome();
  body.scrollTop = body.scrollHeight;
}

function wireThreadComposer() {
  const text = $('#thread-text');
  text.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) { event.preventDefault(); $('#thread-composer').requestSubmit(); }
  });
  $('#thread-composer').onsubmit = async (event) => {
    event.preventDefault();
    if (!state.thread || !text.value.trim()) return;
    try {
      const parent = state.thread;
      const sent = (await api('POST', '/v3/messages', {
        receiver: parent.receiverType === 'group' ? parent.receiverUid
          : (parent.sender === state.me.uid ? parent.receiverUid : parent.sender),
        receiverType: parent.receiverType, category: 'message', type: 'text', data: { text: text.value.trim() },
        parentId: parent.id,
      })).data;
      if (!state.threadReplies.some((reply) => reply.id === sent.id)) {
        state.threadReplies.push(sent);
        // This session gets no event for its own reply (as CometChat's sender does not): count it here.
        const listed = state.messages.get(parent.id);
        if (listed && !state.counted.has(sent.id)) {
          state.counted.add(sent.id);
          listed.replyCount = (listed.replyCount || 0) + 1;
          renderMessage(listed);
        }
      }
      state.thread.replyCount = state.threadReplies.length;
      text.value = '';
      // Replying subscribes the sender (server rule); show what the server now holds.
      state.subscriptions.set(parent.id, true);
      renderThread();
    } catch (error) {
      const gone = error.status === 403 || error.status === 404;
      toast(gone ? copy('THREAD_UNAVAILABLE') : describe(error));
    }
  };
}

start().catch((error) => toast(describe(error)));
