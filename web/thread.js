// The thread panel: a thread's root and replies, its follow controls, and its own composer.
'use strict';

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
