// The composer: quote mode, edit mode, sending, and the @-mention autocomplete that writes
// `<@uid:...>` tokens.
'use strict';

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
