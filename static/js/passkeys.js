// Passkeys: <button data-passkey="create|get" data-passkey-options="URL" hidden> inside a form.
// A click asks the portal for the ceremony's options (POST, with the form's CSRF token and, for
// "get", the change the form makes: its path and idempotency key), lets the browser make or use
// the passkey, puts the answer in the form's `credential` field (create) or `passkey_assertion`
// (get), and sends the form. The buttons stay hidden without JavaScript or WebAuthn.
(function () {
  "use strict";

  function bytes(text) {
    var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(base64 + "===".slice((base64.length + 3) % 4));
    return Uint8Array.from(raw, function (c) { return c.charCodeAt(0); }).buffer;
  }

  function text(buffer) {
    var raw = String.fromCharCode.apply(null, new Uint8Array(buffer));
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function publicKey(options) {
    options.challenge = bytes(options.challenge);
    if (options.user) options.user.id = bytes(options.user.id);
    (options.excludeCredentials || []).concat(options.allowCredentials || []).forEach(
      function (descriptor) { descriptor.id = bytes(descriptor.id); }
    );
    return options;
  }

  function answer(credential) {
    var response = credential.response;
    var json = {clientDataJSON: text(response.clientDataJSON)};
    if (response.attestationObject) {
      json.attestationObject = text(response.attestationObject);
      json.transports = response.getTransports ? response.getTransports() : [];
    } else {
      json.authenticatorData = text(response.authenticatorData);
      json.signature = text(response.signature);
      if (response.userHandle) json.userHandle = text(response.userHandle);
    }
    return JSON.stringify({
      id: credential.id,
      rawId: text(credential.rawId),
      type: credential.type,
      response: json,
      clientExtensionResults: credential.getClientExtensionResults(),
    });
  }

  function action(form) {
    var path = new URL(form.action, document.baseURI).pathname;
    var intent = form.elements.namedItem("intent");
    return intent && intent.value ? path + "#" + intent.value : path;
  }

  function say(button, words) {
    var status = button.parentNode.querySelector(".passkey-status");
    if (status) status.textContent = words;
  }

  function run(button) {
    var form = button.form;
    var ceremony = button.getAttribute("data-passkey");
    var body = new URLSearchParams({action: action(form)});
    say(button, "Waiting for your passkey…");
    fetch(button.getAttribute("data-passkey-options"), {
      method: "POST",
      credentials: "same-origin",
      headers: {"X-CSRFToken": form.querySelector('[name$="csrf_token"]').value},
      body: body,
    }).then(function (reply) {
      if (!reply.ok) throw new Error("no options");
      return reply.json();
    }).then(function (options) {
      var request = {publicKey: publicKey(options)};
      return ceremony === "create" ? navigator.credentials.create(request)
                                   : navigator.credentials.get(request);
    }).then(function (credential) {
      var field = form.querySelector(ceremony === "create" ? '[name$="credential"]'
                                                           : '[name="passkey_assertion"]');
      field.value = answer(credential);
      say(button, "");
      form.requestSubmit();
    }).catch(function () {
      say(button, "The passkey was not used. Try again, or use a code.");
    });
  }

  function reveal(root) {
    if (!root.querySelectorAll || !window.PublicKeyCredential) return;
    root.querySelectorAll("button[data-passkey]").forEach(function (button) {
      button.hidden = false;
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-passkey]");
    if (button) run(button);
  });
  document.addEventListener("DOMContentLoaded", function () { reveal(document); });
  document.addEventListener("htmx:load", function (event) { reveal(event.detail.elt); });
})();
