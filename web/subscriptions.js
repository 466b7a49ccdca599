// Thread subscriptions in the web chat: the event bus every surface listens on, the follow
// controls' switch and hide flags, the optimistic toggle and the bells. Loaded after core.js.
'use strict';

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
