// Perch web chat: plain JavaScript over Perch's HTTP API, no build step, nothing fetched from the
// internet. It signs in with a user's auth token (development sign-in), never with the API key.
// This file, loaded last, starts the page: sign-in, the settings, the people list and the live
// events; the others (index.html lists them) hold the rest. docs/web-chat.md says where each rule
// lives.
'use strict';

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

start().catch((error) => toast(describe(error)));
