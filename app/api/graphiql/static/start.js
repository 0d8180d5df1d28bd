// Mounts GraphiQL (the release files beside this one) on the server's own endpoint.
// A separate file, not an inline script: the page's Content-Security-Policy runs
// scripts from the server only. The query and variables travel in the URL
// (?query=&variables=), so a link opens GraphiQL with them and a reload keeps them;
// headers do not (a token there would end up in history and logs).
(function () {
  "use strict";
  const root = document.getElementById("graphiql");
  const endpoint = new URL(location.pathname, location.href).href;  // where the page is
  const params = new URLSearchParams(location.search);

  function remember(name, value) {
    if (value) params.set(name, value); else params.delete(name);
    history.replaceState(null, "", "?" + params.toString());
  }

  const fetcher = GraphiQL.createFetcher({
    url: endpoint,
    subscriptionUrl: endpoint.replace(/^http/, "ws"),
  });
  root.textContent = "";
  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, {
    fetcher,
    defaultQuery: "{ states(first: 10) { totalCount edges { node { name } } } }\n",
    query: params.get("query") || undefined,
    variables: params.get("variables") || undefined,
    onEditQuery: (query) => remember("query", query),
    onEditVariables: (variables) => remember("variables", variables),
    isHeadersEditorEnabled: true,
  }));
})();
