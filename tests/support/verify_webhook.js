// Verifies a delivery with the Standard Webhooks library from npm, as a shop written in
// JavaScript does. Reads {"secret", "headers", "body"} as JSON on stdin (the body as base64,
// the raw bytes); prints the verified payload as JSON, or the library's error and exits 1.
const { Webhook } = require("standardwebhooks");

let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const { secret, headers, body } = JSON.parse(input);
  try {
    const payload = new Webhook(secret).verify(Buffer.from(body, "base64").toString(), headers);
    process.stdout.write(JSON.stringify(payload));
  } catch (error) {
    process.stdout.write(`${error.name}: ${error.message}`);
    process.exit(1);
  }
});
