// The action sheet a message opens: reactions, quote, reply in thread, the follow option, copy,
// pin, save, edit and delete, each shown only where the server would allow it.
'use strict';

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
