// Sign-in: the token form, shown when the API wants a token the dashboard cannot get by itself (web/api.js), and
// "Change token", which forgets the token and asks again.
import { assign, byId } from '../dom.js';

/**
 * @param {{ api: import('../poll.js').PanelContext['api'], onToken: () => void, onShown: () => void }} options
 * `onToken`: a token was given; `onShown`: the form is up, the dashboard waits for it.
 */
export function createSignIn({ api, onToken, onShown }) {
  const form = byId('login');
  const tokenInput = /** @type {HTMLTextAreaElement} */ (byId('token-input'));
  const main = byId('main');
  const signOut = byId('sign-out');

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    api.setToken(tokenInput.value.replace(/^Bearer\s+/i, ''));
    tokenInput.value = '';
    onToken();
  });
  signOut.addEventListener('click', () => {
    api.signOut();
    show('Paste a bearer token with the provider-admin role.');
  });

  /** @param {string} reason */
  function show(reason) {
    byId('login-reason').textContent = reason;
    assign(form, { hidden: false });
    assign(main, { hidden: true });
    assign(signOut, { hidden: true });
    onShown();
    tokenInput.focus();
  }

  /** A refresh went through: the dashboard, not the form. */
  function hide() {
    assign(form, { hidden: true });
    assign(main, { hidden: false });
    assign(signOut, { hidden: false });
  }

  return { show, hide };
}
