// Force-unlock: the HTTP backend's UNLOCK with an empty body (what `terraform
// force-unlock` sends), so the server's own checks and audit event apply.
"use strict";
(function () {
  const button = document.getElementById("force-unlock");
  if (!button) return;
  button.addEventListener("click", async () => {
    const name = button.dataset.state;
    if (!window.confirm("Force-unlock " + name + "? Whoever holds the lock may still be writing.")) return;
    const path = name.split("/").map(encodeURIComponent).join("/");
    const response = await fetch("/states/" + path, { method: "UNLOCK", credentials: "same-origin" });
    const result = document.getElementById("unlock-result");
    if (response.ok) {
      location.reload();
    } else {
      const body = await response.json().catch(() => ({}));
      result.textContent = body.error || response.status + " " + response.statusText;
      result.className = "error";
    }
  });
})();
