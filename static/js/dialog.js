// SPDX-License-Identifier: MIT
// Modal dialogs (<dialog>, showModal): the delete confirmation of the jobs page and the token
// prompt. Escape or Cancel closes one; strings enter as text like everywhere (dom.js).
import { el } from './dom.js';

// Opens a modal with title, body nodes and a form whose submit runs onSubmit(dialog, errorLine);
// onSubmit returns true to close. Returns the dialog element (id given, for tests and styles).
export function modal({ id, title, body, submit, cancel = 'Cancel', danger = false, onSubmit }) {
  document.getElementById(id)?.remove();
  const error = el('p.note.error.dialog-error', { role: 'alert', hidden: true });
  const ok = el(`button.btn${danger ? '.danger' : ''}`, { type: 'submit', dataset: { action: 'submit' } }, submit);
  const buttons = [cancel ? el('button.btn', { type: 'button', dataset: { action: 'cancel' }, onclick: () => close() }, cancel) : null, ok];
  const form = el('form', { method: 'dialog' }, el('h3', null, title), body, error, el('div.dialog-actions', null, buttons));
  const dialog = el(`dialog#${id}.modal`, { 'aria-label': title }, form);
  function close() {
    dialog.close();
    dialog.remove();
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    ok.disabled = true;
    error.hidden = true;
    try {
      if (await onSubmit(dialog)) close();
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    } finally {
      ok.disabled = false;
    }
  });
  dialog.addEventListener('close', () => dialog.remove());
  document.body.appendChild(dialog);
  dialog.showModal();
  return dialog;
}
