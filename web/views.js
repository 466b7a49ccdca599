// The web chat's side views: a conversation's pinned messages, the threads inbox, the saved
// messages and the notification preferences. Loaded after core.js; the other files' functions
// it uses at run time.
'use strict';

async function openPins() {
  if (!state.conversation) return;
  await loadPins();
  $('#side').hidden = false;
  $('#side').dataset.mode = 'pins';
  $('#thread-composer').hidden = true;
  state.thread = null;
  $('#side-title').textContent = 'Pinned messages';
  $('#top-bell-slot').replaceChildren();
  // A pinned thread reply shows its thread's root; "Show" opens it in its thread.
  $('#side-body').replaceChildren(el('ol', { class: 'messages', 'data-testid': 'pinned-list' },
    ...state.pinned.map((message) => el('li', { class: 'msg', 'data-id': message.id },
      message.parentMessage ? el('div', { class: 'meta', 'data-testid': 'pinned-thread' },
        `in the thread of “${plain(message.parentMessage)}”`) : null,
      el('span', { class: 'who' }, senderName(message.sender)), plain(message),
      el('button', {
        class: 'link', 'data-testid': 'pinned-show', onclick: () => showMessageInPlace(message),
      }, 'Show')))));
}

// Shows a message where it was said: its conversation opened, and, for a thread reply, its thread,
// with the message scrolled to and highlighted.
async function showMessageInPlace(message) {
  const other = message.sender === state.me.uid ? message.receiverUid : message.sender;
  const conversation = message.receiverType === 'group'
    ? { kind: 'group', id: message.receiverUid, name: (state.groups.get(message.receiverUid) || {}).name || message.receiverUid }
    : { kind: 'user', id: other, name: senderName(other) };
  const open = state.conversation;
  if (!open || open.kind !== conversation.kind || open.id !== conversation.id) await openConversation(conversation);
  if (message.parentMessageId) {
    await openThread({ id: message.parentMessageId });
    highlightIn('#side-body', message.id);
  } else {
    scrollToMessage(message.id);
  }
}

// ---------- views: threads inbox, saved messages, preferences ----------

async function openView(view) {
  state.conversation = null;
  state.view = view;
  closeSide();
  for (const button of document.querySelectorAll('.convs button')) {
    button.classList.toggle('active', button.dataset.view === view);
  }
  $('#messages').hidden = true;
  $('#composer').hidden = true;
  $('#pin-banner').hidden = true;
  $('#pins-toggle').hidden = true;
  $('#mute-toggle').hidden = true;
  const target = $('#view');
  try {
    if (view === 'notifications') renderNotifications(target);
    else if (view === 'threads') await renderThreadsInbox(target);
    else if (view === 'saved') await renderSaved(target);
    else await renderPreferences(target);
  } catch (error) {
    toast(describe(error));
  }
}

// The inbox is ordered by the last reply's time, falling back to the parent's, never by updatedAt.
async function renderThreadsInbox(target) {
  $('#conv-title').textContent = 'Threads';
  const threads = (await api('GET', '/v3/threads?limit=100')).data;
  const activity = (thread) => (thread.lastReply ? thread.lastReply.sentAt : thread.parentMessage.sentAt);
  threads.sort((a, b) => activity(b) - activity(a) || b.parentMessageId - a.parentMessageId);
  target.replaceChildren(el('div', { class: 'list-view', 'data-testid': 'threads-inbox' },
    threads.length ? null : el('p', {}, 'No threads yet.'),
    ...threads.map((thread) => el('button', {
      class: 'thread-row', 'data-testid': `thread-${thread.parentMessageId}`,
      onclick: async () => {
        const conversation = thread.receiverType === 'group'
          ? { kind: 'group', id: thread.receiverUid, name: thread.receiverUid }
          : { kind: 'user', id: thread.parentMessage.sender === state.me.uid ? thread.receiverUid : thread.parentMessage.sender };
        if (conversation.kind === 'user') conversation.name = senderName(conversation.id);
        await openConversation(conversation);
        openThread(thread.parentMessage);
      },
    }, el('strong', {}, `${senderName(thread.parentMessage.sender)}: `), plain(thread.parentMessage),
    el('div', { class: 'meta' }, `${thread.replyCount} replies`,
      thread.lastReply ? ` · last: ${senderName(thread.lastReply.sender)}: ${plain(thread.lastReply)}` : '')))));
}

async function renderSaved(target) {
  $('#conv-title').textContent = 'Saved messages';
  const saved = await everyPage('/v3/messages?saved=true&limit=100');
  // Each names its conversation and opens there (in its thread, for a reply).
  target.replaceChildren(el('div', { class: 'list-view', 'data-testid': 'saved-list' },
    saved.length ? null : el('p', {}, 'Nothing saved yet.'),
    ...saved.map((message) => el('button', {
      class: 'thread-row', 'data-id': message.id, 'data-testid': `saved-${message.id}`,
      onclick: () => showMessageInPlace(message),
    },
    el('div', { class: 'meta', 'data-testid': 'saved-conversation' }, conversationLabel(message)),
    el('span', { class: 'who' }, senderName(message.sender)), plain(message)))));
}

const preferenceChoices = {
  messages: ['DONT_SUBSCRIBE', 'SUBSCRIBE_TO_ALL', 'SUBSCRIBE_TO_MENTIONS'],
  replies: ['DONT_SUBSCRIBE', 'SUBSCRIBE_TO_ALL', 'SUBSCRIBE_TO_MENTIONS', 'SUBSCRIBE_TO_SUBSCRIBED_THREADS'],
  quotedReplies: ['DONT_SUBSCRIBE', 'SUBSCRIBE_TO_ALL', 'SUBSCRIBE_TO_MENTIONS', 'SUBSCRIBE_TO_QUOTES_ON_OWN_MESSAGES'],
};

async function renderPreferences(target) {
  $('#conv-title').textContent = 'Notification preferences';
  const preferences = (await api('GET', '/v3/notifications/preferences')).data;
  const field = (group, key, kind, label) => {
    const current = preferences[group][key];
    return el('label', {}, label, el('select', {
      'data-testid': `pref-${key}`,
      onchange: async (event) => {
        try {
          const answer = await api('PUT', '/v3/notifications/preferences', { [group]: { [key]: event.target.value } });
          Object.assign(preferences, answer.data);
          toast('Preferences saved.');
        } catch (error) {
          toast(describe(error));
        }
      },
    }, ...preferenceChoices[kind].map((name, index) => el('option', {
      value: name, selected: (typeof current === 'number' ? index + 1 === current : name === current) || undefined,
    }, name))));
  };
  target.replaceChildren(el('form', { class: 'list-view prefs', 'data-testid': 'preferences' },
    el('h2', {}, 'Groups'),
    field('groupPreferences', 'groupMessages', 'messages', 'Messages'),
    field('groupPreferences', 'groupReplies', 'replies', 'Replies'),
    field('groupPreferences', 'groupQuotedReplies', 'quotedReplies', 'Quote replies'),
    el('h2', {}, 'One-on-one'),
    field('oneOnOnePreferences', 'oneOnOneMessages', 'messages', 'Messages'),
    field('oneOnOnePreferences', 'oneOnOneReplies', 'replies', 'Replies'),
    field('oneOnOnePreferences', 'oneOnOneQuotedReplies', 'quotedReplies', 'Quote replies'),
    el('h2', {}, 'Do not disturb'),
    el('label', { class: 'check' }, el('input', {
      type: 'checkbox',
      'data-testid': 'pref-dnd',
      checked: Boolean(preferences.mutePreferences && preferences.mutePreferences.dnd),
      onchange: async (event) => {
        const dnd = event.target.checked;
        try {
          const answer = await api('PUT', '/v3/notifications/preferences', { mutePreferences: { dnd } });
          Object.assign(preferences, answer.data);
          toast(dnd ? 'Do not disturb is on: no notifications.' : 'Do not disturb is off.');
        } catch (error) {
          event.target.checked = !dnd;
          toast(describe(error));
        }
      },
    }), 'No notifications from any conversation')));
}
