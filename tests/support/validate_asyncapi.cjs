// Validates an AsyncAPI 3.0.0 document (JSON on stdin) against the official JSON Schema of
// @asyncapi/specs (pinned in package.json). Prints each error, one per line; exit 1 if any,
// 0 if valid. Used by tests/cli/test_asyncapi.py.
const Ajv = require("ajv");
const addFormats = require("ajv-formats");
const specs = require("@asyncapi/specs");

const document = JSON.parse(require("fs").readFileSync(0, "utf8"));
// The AsyncAPI schema embeds the draft-07 meta-schema itself: without Ajv's own copy (meta: false)
// the two do not clash.
const ajv = new Ajv({ allErrors: true, strict: false, meta: false, validateSchema: false });
addFormats(ajv);
const validate = ajv.compile(specs.schemas["3.0.0"]);
if (validate(document)) {
  console.log("valid: AsyncAPI 3.0.0");
  process.exit(0);
}
for (const error of validate.errors) {
  console.log(`${error.instancePath || "/"} ${error.message} ${JSON.stringify(error.params)}`);
}
process.exit(1);
