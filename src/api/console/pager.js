// Cursor paging for the list panels. The API hands out next_cursor only; going back replays the
// cursors that led here.
import { h } from './dom.js';

export class Pager {
  // load(cursor) shows one page and resolves to its next_cursor (null on the last page), or to
  // undefined when the call failed (the page stays as it was).
  constructor(container, label, load) {
    this.load = load;
    this.history = [];
    this.cursor = null;
    this.next = null;
    this.prevButton = h('button', { type: 'button', onclick: () => this.back() }, 'Previous page');
    this.nextButton = h('button', { type: 'button', onclick: () => this.forward() }, 'Next page');
    this.label = h('span', { class: 'page' });
    container.replaceChildren(this.prevButton, this.label, this.nextButton);
    container.setAttribute('aria-label', label);
    this.render();
  }

  first() {
    return this.show(null, []);
  }

  reload() {
    return this.show(this.cursor, this.history);
  }

  forward() {
    if (this.next) return this.show(this.next, [...this.history, this.cursor]);
    return Promise.resolve();
  }

  back() {
    if (this.history.length) return this.show(this.history.at(-1), this.history.slice(0, -1));
    return Promise.resolve();
  }

  async show(cursor, history) {
    const next = await this.load(cursor);
    if (next === undefined) return;
    this.cursor = cursor;
    this.history = history;
    this.next = next;
    this.render();
  }

  render() {
    this.prevButton.disabled = this.history.length === 0;
    this.nextButton.disabled = !this.next;
    this.label.textContent = `Page ${this.history.length + 1}`;
  }
}
