'use strict';
// The login page: trades the token for a session cookie (POST /v1/session), then goes
// back to the viewer page that sent the browser here.
(() => {
  // next is the viewer page to return to: a path under /ui/ only, never another origin.
  function next() {
    const n = new URLSearchParams(location.search).get('next') || '';
    return /^\/ui\/[^/\\]/.test(n) || n === '/ui/' ? n : '/ui/';
  }
  const form = document.getElementById('login');
  const error = document.getElementById('error');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    const token = document.getElementById('token').value;
    try {
      const resp = await fetch('/v1/session', {
        method: 'POST',
        credentials: 'same-origin',
        headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({token}),
      });
      if (resp.ok) {
        location.replace(next());
        return;
      }
      error.textContent = resp.status === 401 ? 'That token is not accepted.' : 'Log in failed (HTTP ' + resp.status + ').';
    } catch (e) {
      error.textContent = 'The daemon did not answer: ' + e.message;
    }
    error.hidden = false;
  });
})();
