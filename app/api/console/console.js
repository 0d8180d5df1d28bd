// infragraph's query console: a query editor, variables, run, the result, and the
// schema's docs from introspection. No build step, no dependency, nothing from
// elsewhere: GraphiQL's stand-in where its CDN cannot be reached (/graphql falls
// back to it), and a console of its own at /console/.
//
//   InfragraphConsole.mount(element, {url, query, variables, notice})
//
// Queries and mutations are POSTed to `url`; a subscription opens a
// graphql-transport-ws websocket on it. The optional token is sent as a Bearer
// header (and in connection_init); without one the browser's own credentials
// for the page (Basic auth) go along.
(function () {
  "use strict";

  const DEFAULT_QUERY = "{ states(first: 10) { totalCount edges { node { name } } } }\n";
  const TYPE_REF = "kind name ofType { kind name ofType { kind name ofType { kind name } } }";
  const INTROSPECTION = `query ConsoleDocs { __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { name kind description
      fields { name description args { name description type { ${TYPE_REF} } }
               type { ${TYPE_REF} } }
      inputFields { name description type { ${TYPE_REF} } }
      enumValues { name description } } } }`;

  function h(tag, attributes, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
      else element.setAttribute(name, value);
    }
    element.append(...children.filter((child) => child !== null && child !== undefined));
    return element;
  }

  function typeLabel(type) {
    if (type.kind === "NON_NULL") return typeLabel(type.ofType) + "!";
    if (type.kind === "LIST") return "[" + typeLabel(type.ofType) + "]";
    return type.name;
  }

  function namedType(type) {
    return type.ofType ? namedType(type.ofType) : type.name;
  }

  function isSubscription(query) {
    const code = query.replace(/#[^\n]*/g, "").trim();
    return /^subscription\b/.test(code);
  }

  function remember(name, value) {
    const params = new URLSearchParams(location.search);
    params.set(name, value);
    history.replaceState(null, "", "?" + params.toString());
  }

  function mount(root, options) {
    const url = new URL(options.url || "/graphql", location.href).href;
    const query = h("textarea", { class: "ig-query", "aria-label": "Query", spellcheck: "false" });
    query.value = options.query || DEFAULT_QUERY;
    const variables = h("textarea", {
      class: "ig-variables", "aria-label": "Variables", spellcheck: "false",
      placeholder: "variables (JSON)",
    });
    variables.value = options.variables || "";
    const token = h("input", {
      class: "ig-token", type: "password", "aria-label": "Token", autocomplete: "off",
      placeholder: "token (optional)",
    });
    const run = h("button", { class: "ig-run", type: "button", title: "Run (Ctrl-Enter)" }, "Run");
    const result = h("pre", { class: "ig-result", "aria-label": "Result", "aria-live": "polite" });
    const docs = h("nav", { class: "ig-docs", "aria-label": "Schema" }, "Loading the schema…");
    let socket = null;

    function headers() {
      const sent = { "Content-Type": "application/json", Accept: "application/json" };
      if (token.value) sent.Authorization = "Bearer " + token.value;
      return sent;
    }

    async function post(body) {
      const response = await fetch(url, {
        method: "POST", headers: headers(), body: JSON.stringify(body),
        credentials: "same-origin",
      });
      const text = await response.text();
      try {
        return JSON.parse(text);
      } catch (error) {
        return { status: response.status, body: text };
      }
    }

    function stop() {
      if (socket) socket.close();
      socket = null;
      run.textContent = "Run";
    }

    function subscribe(operation, values) {
      const received = [];
      socket = new WebSocket(url.replace(/^http/, "ws"), "graphql-transport-ws");
      run.textContent = "Stop";
      result.textContent = "Subscribed; waiting for events…";
      socket.onopen = () => socket.send(JSON.stringify({
        type: "connection_init",
        payload: token.value ? { authorization: "Bearer " + token.value } : {},
      }));
      socket.onmessage = (message) => {
        const data = JSON.parse(message.data);
        if (data.type === "connection_ack") {
          socket.send(JSON.stringify({
            id: "1", type: "subscribe", payload: { query: operation, variables: values },
          }));
        } else if (data.type === "next" || data.type === "error") {
          received.unshift(data.payload);
          result.textContent = JSON.stringify(received, null, 2);
        } else if (data.type === "ping") {
          socket.send(JSON.stringify({ type: "pong" }));
        }
      };
      socket.onclose = (event) => {
        if (event.code !== 1000 && event.code !== 1005) {
          result.textContent += "\n(the connection closed: " + event.code + " " + event.reason + ")";
        }
        stop();
      };
    }

    async function execute() {
      if (socket) return stop();
      let values = {};
      if (variables.value.trim()) {
        try {
          values = JSON.parse(variables.value);
        } catch (error) {
          result.textContent = "The variables are not JSON: " + error.message;
          return;
        }
      }
      if (isSubscription(query.value)) return subscribe(query.value, values);
      result.textContent = "Running…";
      try {
        const answer = await post({ query: query.value, variables: values });
        result.textContent = JSON.stringify(answer, null, 2);
      } catch (error) {
        result.textContent = "The request failed: " + error.message;
      }
    }

    function showDocs(schema, typeName) {
      const types = new Map(schema.types.map((type) => [type.name, type]));
      const link = (name) => types.has(name)
        ? h("a", { href: "#", class: "ig-type", onclick: (event) => {
            event.preventDefault();
            showDocs(schema, name);
          } }, name)
        : name;
      const typed = (type) => {
        const label = typeLabel(type);
        const name = namedType(type);
        const at = label.indexOf(name);
        return h("span", {}, label.slice(0, at), link(name), label.slice(at + name.length));
      };
      const field = (f) => h("li", { class: "ig-field" },
        h("code", {}, f.name,
          f.args && f.args.length
            ? h("span", {}, "(", ...f.args.flatMap((a, i) =>
                [i ? ", " : "", a.name + ": ", typed(a.type)]), ")")
            : null,
          ": ", typed(f.type)),
        f.description ? h("p", {}, f.description) : null);
      const section = (title, type) => type && h("section", {},
        h("h3", {}, title, " ", link(type.name)),
        h("ul", {}, ...(types.get(type.name).fields || []).map(field)));
      docs.textContent = "";
      if (!typeName) {
        docs.append(h("h2", {}, "Schema"),
          section("query", schema.queryType),
          section("mutation", schema.mutationType),
          section("subscription", schema.subscriptionType));
        return;
      }
      const type = types.get(typeName);
      const members = (type.fields || type.inputFields || []).map(field)
        .concat((type.enumValues || []).map((v) => h("li", { class: "ig-field" },
          h("code", {}, v.name), v.description ? h("p", {}, v.description) : null)));
      docs.append(
        h("a", { href: "#", class: "ig-back", onclick: (event) => {
          event.preventDefault();
          showDocs(schema, null);
        } }, "← Schema"),
        h("h2", {}, type.name, h("small", {}, " " + type.kind.toLowerCase())),
        type.description ? h("p", {}, type.description) : null,
        h("ul", {}, ...members));
    }

    async function loadDocs() {
      try {
        const answer = await post({ query: INTROSPECTION });
        if (!answer.data) throw new Error(JSON.stringify(answer.errors || answer));
        showDocs(answer.data.__schema, null);
      } catch (error) {
        docs.textContent = "No schema docs: " + error.message;
      }
    }

    query.addEventListener("keydown", (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        event.preventDefault();
        execute();
      } else if (event.key === "Tab" && !event.shiftKey) {
        event.preventDefault();
        query.setRangeText("  ", query.selectionStart, query.selectionEnd, "end");
      }
    });
    query.addEventListener("input", () => remember("query", query.value));
    variables.addEventListener("input", () => remember("variables", variables.value));
    token.addEventListener("change", loadDocs);
    run.addEventListener("click", execute);

    root.textContent = "";
    root.className = "ig-console";
    // append() writes null as the text "null": leave the notice out when there is none
    const parts = [
      h("header", {}, h("strong", {}, "infragraph console"), run, token),
      h("main", {},
        h("div", { class: "ig-editors" }, query, variables),
        result,
        docs)];
    if (options.notice) parts.unshift(h("p", { class: "ig-notice", role: "status" }, options.notice));
    root.append(...parts);
    loadDocs();
    return { run: execute };
  }

  window.InfragraphConsole = { mount };
})();
