// Starts Swagger UI (swagger-ui-bundle.js, loaded before this file) on the document the page
// names in data-openapi-url: a URL relative to the page, so it works under any DOCS_PATH and
// behind a proxy. A separate file rather than an inline script, for the page's
// Content-Security-Policy (script-src 'self').
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    domNode: root,
    deepLinking: true,
    // Tags start collapsed: the list of every operation is long; a deep link (#/leasing)
    // opens its tag.
    docExpansion: "none",
    displayOperationId: true,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    // The online validator badge would call a third-party server: never.
    validatorUrl: null,
  });
})();
