// An open conversation: its messages (loaded, rendered, scrolled to), its mute, members and pins,
// and how a message is drawn (quotes, attachments, reactions, thread counts).
'use strict';

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
