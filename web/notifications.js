// The notification centre: the signed-in person's notifications (the server's outbox, read and
// unread state kept there, so every tab agrees), newest first, with the unread count as a badge.
// New ones arrive on the event stream (`onNotification`); marking read in any tab reaches the
// others (`onNotificationsRead`). When the tab is hidden and the person allowed it, the browser's
// Notification API shows each one. Loaded after core.js; the other files' functions it uses at
// run time.
'use strict';

const notices = { rows: [], unread: 0 };

// The list and the count, as the server has them (at sign-in, and after every reconnection: what
// was routed while the stream was away is here).
async function loadNotifications() {
  try {
    const page = await api('GET', '/v3/notifications?order=newest&limit=50');
    notices.rows = page.data;
    notices.unread = page.meta.unreadCount;
  } catch (error) {
    return;
  }
  renderNotificationBadge();
  if (state.view === 'notifications') renderNotifications($('#view'));
}

function renderNotificationBadge() {
  const badge = $('#notif-badge');
  badge.textContent = notices.unread > 99 ? '99+' : String(notices.unread);
  badge.hidden = notices.unread === 0;
}

// `onNotification`: a new row, unless this tab has it already.
function onNotification(row) {
  if (notices.rows.some((known) => known.id === row.id)) return;
  notices.rows.unshift(row);
  if (!row.readAt) notices.unread += 1;
  renderNotificationBadge();
  if (state.view === 'notifications') renderNotifications($('#view'));
  if (document.hidden && row.message && !row.readAt && 'Notification' in window
      && Notification.permission === 'granted') {
    const shown = new Notification(`${senderName(row.message.sender)} · ${conversationLabel(row.message)}`, {
      body: plain(row.message), tag: `perch-notification-${row.id}`,
    });
    shown.onclick = () => {
      window.focus();
      shown.close();
      openNotification(row);
    };
  }
}

// `onNotificationsRead`: rows marked read here or in another tab.
function onNotificationsRead(read) {
  const now = Math.floor(Date.now() / 1000);
  for (const row of notices.rows) {
    if (!row.readAt && (read.seqs.includes(row.id) || row.id <= read.through)) row.readAt = now;
  }
  notices.unread = read.unreadCount;
  renderNotificationBadge();
  if (state.view === 'notifications') renderNotifications($('#view'));
}

async function markNotificationsRead(body) {
  try {
    onNotificationsRead((await api('POST', '/v3/notifications/read', body)).data);
  } catch (error) {
    toast(describe(error));
  }
}

// Where a message was said: `# group`, or the other person of a one-on-one conversation.
function conversationLabel(message) {
  if (message.receiverType === 'group') {
    const group = state.groups.get(message.receiverUid);
    return `# ${group ? group.name : message.receiverUid}`;
  }
  return senderName(message.sender === state.me.uid ? message.receiverUid : message.sender);
}

const reasonLabels = {
  mention: 'mentioned you',
  reply: 'replied',
  subscribed_thread: 'replied in a thread you follow',
  quote_on_own_message: 'quoted your message',
  message: 'wrote',
};

// Opens the message where it was said, in its thread when it is a reply, and marks it read.
async function openNotification(row) {
  if (!row.readAt) markNotificationsRead({ ids: [row.id] });
  if (!row.message) return toast('You can no longer read this message.');
  await showMessageInPlace(row.message);
}

function renderNotifications(target) {
  $('#conv-title').textContent = 'Notifications';
  const canAsk = 'Notification' in window && Notification.permission === 'default';
  target.replaceChildren(el('div', { class: 'list-view', 'data-testid': 'notifications' },
    el('div', { class: 'list-actions' },
      el('button', {
        class: 'link', 'data-testid': 'notif-mark-all', disabled: notices.unread === 0,
        onclick: () => markNotificationsRead({ all: true }),
      }, 'Mark all read'),
      canAsk ? el('button', {
        class: 'link', 'data-testid': 'notif-permission',
        onclick: async () => { await Notification.requestPermission(); renderNotifications(target); },
      }, 'Show notifications while this tab is hidden') : null),
    notices.rows.length ? null : el('p', {}, 'No notifications yet.'),
    ...notices.rows.map((row) => {
      const message = row.message;
      const parent = message && message.parentMessage;
      return el('button', {
        class: `notification${row.readAt ? '' : ' unread'}`, 'data-testid': `notification-${row.id}`,
        'data-read': String(Boolean(row.readAt)), onclick: () => openNotification(row),
      },
      el('div', { class: 'meta' },
        message ? `${conversationLabel(message)} · ${new Date(row.createdAt * 1000).toLocaleString()}` : ''),
      el('div', {},
        el('strong', {}, message ? senderName(message.sender) : 'Someone'), ` ${reasonLabels[row.reason] || row.reason}`,
        parent ? el('span', { class: 'meta', 'data-testid': 'notification-thread' }, ` in the thread of “${plain(parent)}”`) : null),
      el('div', { class: 'text' }, message ? plain(message) : 'You can no longer read this message.'),
      row.readAt ? null : el('span', {
        class: 'link', role: 'button', 'data-testid': `notif-read-${row.id}`,
        onclick: (event) => { event.stopPropagation(); markNotificationsRead({ ids: [row.id] }); },
      }, 'Mark read'));
    })));
}
