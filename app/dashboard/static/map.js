// The states map, live: events.js subscribes to the events; after one that may change
// the map (a new version of a state, a consumer made stale, a state deleted) the page
// asks the server for itself again and swaps in its map, so what is stale is what the
// server says (app/graph/links.py), never worked out here. Events close together cost
// one request.
"use strict";
(function () {
  const dot = document.getElementById("live");
  const CHANGES = new Set(["consumer-stale", "delete", "prune"]);
  const PAUSE = 250; // ms: the events of one write arrive together
  let timer = null;
  let again = false;
  let running = false;

  async function refresh() {
    timer = null;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      const response = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (response.ok) {
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.getElementById("map-live");
        const shown = document.getElementById("map-live");
        if (fresh && shown) shown.replaceWith(document.adoptNode(fresh));
      }
    } catch (error) {
      // the next event asks again
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule();
      }
    }
  }

  function schedule() {
    if (timer === null) timer = setTimeout(refresh, PAUSE);
  }

  window.subscribeEvents((event) => {
    if (event.serial !== null || CHANGES.has(event.action)) schedule();
  }, dot);
})();
