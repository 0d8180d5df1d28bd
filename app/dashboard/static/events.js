// The pages' live events: a minimal graphql-transport-ws client of the `events`
// subscription on /ui/live, the websocket of /graphql where a browser sends the Basic
// credentials of any dashboard page (those of a page under /ui/ do not go to /graphql).
// subscribeEvents(onEvent, dot): each event to onEvent; the dot shows ● while
// subscribed, ○ while not; a dropped connection is retried with a growing pause.
"use strict";
window.subscribeEvents = function (onEvent, dot) {
  const QUERY = "subscription { events { id stateName action actor serial detail createdAt } }";
  let retry = 1000;

  function connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(scheme + "//" + location.host + "/ui/live", "graphql-transport-ws");
    ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init", payload: {} }));
    ws.onmessage = (message) => {
      const msg = JSON.parse(message.data);
      if (msg.type === "connection_ack") {
        ws.send(JSON.stringify({ id: "events", type: "subscribe", payload: { query: QUERY } }));
        if (dot) {
          dot.textContent = "●";
          dot.classList.add("on");
        }
        retry = 1000;
      } else if (msg.type === "ping") {
        ws.send(JSON.stringify({ type: "pong" }));
      } else if (msg.type === "next" && msg.payload.data) {
        onEvent(msg.payload.data.events);
      }
    };
    ws.onclose = () => {
      if (dot) {
        dot.textContent = "○";
        dot.classList.remove("on");
      }
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  }

  if ("WebSocket" in window) connect();
};
