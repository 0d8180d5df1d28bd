// The overview's live events (events.js subscribes): each prepended to the list, and
// its state's row and the totals updated.
"use strict";
(function () {
  const list = document.getElementById("events");
  const dot = document.getElementById("live");
  const states = document.querySelector("#states tbody");

  function text(tag, value, cls) {
    const el = document.createElement(tag);
    el.textContent = value;
    if (cls) el.className = cls;
    return el;
  }

  function stateLink(name) {
    const a = text("a", name);
    a.href = "/ui/state?" + new URLSearchParams({ name: name });
    return a;
  }

  function when(iso) {
    return iso.replace("T", " ").replace(/\.\d+/, "").replace(/(Z|[+-]00:00)$/, "");
  }

  function show(event) {
    const li = document.createElement("li");
    li.className = "fresh";
    li.append(text("time", when(event.createdAt)), " ", text("b", event.action, "action"), " ",
      stateLink(event.stateName));
    if (event.serial !== null) li.append(" #" + event.serial);
    li.append(" ", text("span", "by " + event.actor, "actor"));
    list.prepend(li);
    while (list.children.length > 50) list.lastElementChild.remove();
    updateState(event);
  }

  const WRITES = new Set(["write", "apply", "release"]); // events of a new version

  // The totals line: states, resources, locked (their <b> in that order).
  const totals = Array.from(document.querySelectorAll("#totals b"));
  function addToTotal(index, delta) {
    const b = totals[index];
    if (!b || !delta) return;
    const value = Number(b.textContent.replace(/,/g, "")) + delta;
    b.textContent = value.toLocaleString("en-US");
  }

  // The state's kind and resource count, which an event does not carry: asked of the
  // GraphQL API (same origin: the page's credentials go along).
  const DETAILS = "query($name: String!) { state(name: $name) { kind currentVersion { resourceCount } } }";
  async function fillDetails(row, name) {
    const answer = await fetch("/graphql", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query: DETAILS, variables: { name: name } }),
    }).then((response) => response.json()).catch(() => null);
    const state = answer && answer.data && answer.data.state;
    if (!state || !row.isConnected) return;
    row.cells[1].textContent = state.kind.toLowerCase();
    const count = state.currentVersion ? state.currentVersion.resourceCount : null;
    if (count === null) return;
    const before = Number(row.cells[3].dataset.count || 0);
    row.cells[3].dataset.count = count;
    row.cells[3].textContent = count.toLocaleString("en-US");
    addToTotal(1, count - before);
  }

  function stateRow(name, create) {
    const rows = Array.from(states.rows).filter((r) => r.dataset.state !== undefined);
    let row = rows.find((r) => r.dataset.state === name);
    if (!row && create) {
      // in the server's order (by name): before the first row named after it
      const next = rows.find((r) => r.dataset.state > name);
      row = states.insertRow(next ? next.sectionRowIndex : rows.length);
      row.dataset.state = name;
      for (let i = 0; i < 7; i++) row.insertCell();
      row.cells[0].append(stateLink(name));
      row.cells[2].className = "num serial";
      row.cells[3].className = "num";
      row.cells[4].className = "written";
      row.cells[5].className = "writer";
      row.cells[6].className = "lock";
      states.querySelectorAll("tr.empty").forEach((empty) => empty.remove());
      addToTotal(0, 1);
    }
    return row;
  }

  function updateState(event) {
    if (!states) return;
    const written = WRITES.has(event.action) && event.serial !== null;
    const row = stateRow(event.stateName, written);
    if (!row) return;
    const wasLocked = row.cells[6].childElementCount > 0;
    if (written) {
      row.cells[2].textContent = event.serial;
      row.cells[4].textContent = "just now";
      row.cells[5].textContent = event.actor;
      fillDetails(row, event.stateName);
    } else if (event.action === "lock") {
      const badge = text("span", (event.detail.who || event.actor) + " · now", "badge locked");
      row.cells[6].replaceChildren(badge);
      if (!wasLocked) addToTotal(2, 1);
    } else if (event.action === "unlock" || event.action === "force-unlock") {
      row.cells[6].replaceChildren();
      if (wasLocked) addToTotal(2, -1);
    } else if (event.action === "delete") {
      addToTotal(0, -1);
      addToTotal(1, -Number(row.cells[3].dataset.count || 0));
      if (wasLocked) addToTotal(2, -1);
      row.remove();
      return;
    }
    row.classList.remove("fresh");
    void row.offsetWidth; // restart the highlight
    row.classList.add("fresh");
  }

  if (list) window.subscribeEvents(show, dot);
})();
