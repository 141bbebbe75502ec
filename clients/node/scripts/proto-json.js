// Round-trips the shared proto JSON fixtures through protobuf-es, for
// tests/external/test_proto_json_fixtures.py, which compares the result with
// Python's json_format on the same files.
//
//   node scripts/proto-json.js FIXTURE_DIR [PYTHON_BINARY_DIR]
//
// A fixture's message type is the first dot-separated part of its file name
// (Claim.json, Claim.explicit-presence.json -> assay.v1.Claim). For each one it
// prints, in one JSON object keyed by file name:
//   json        toJson(fromJson(fixture)) with the canonical options (the
//               protobuf-es defaults: lowerCamelCase names, enum names,
//               fields without presence omitted when they hold their default);
//   binary      the protobuf-es binary encoding, base64, for Python to parse;
//   fromPython  toJson(fromBinary(NAME.binpb)) when PYTHON_BINARY_DIR holds
//               Python's encoding of the same fixture.
// Unknown fields or malformed values fail the run (strict parsing).

import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import * as assay from "../src/index.js";

const CANONICAL_JSON = Object.freeze({
  alwaysEmitImplicit: false,
  enumAsInteger: false,
  useProtoFieldName: false,
});

function schemaFor(fileName) {
  const typeName = fileName.split(".")[0];
  const schema = assay[`${typeName}Schema`];
  if (!schema || schema.kind !== "message") {
    throw new Error(`${fileName}: no assay.v1 message named ${typeName}`);
  }
  return schema;
}

const [fixtureDir, binaryDir] = process.argv.slice(2);
if (!fixtureDir) {
  console.error("usage: node scripts/proto-json.js FIXTURE_DIR [PYTHON_BINARY_DIR]");
  process.exit(2);
}

const results = {};
for (const fileName of readdirSync(fixtureDir).filter((name) => name.endsWith(".json")).sort()) {
  const schema = schemaFor(fileName);
  const fixture = JSON.parse(readFileSync(join(fixtureDir, fileName), "utf8"));
  const message = fromJson(schema, fixture);
  const entry = {
    type: schema.typeName,
    json: toJson(schema, message, CANONICAL_JSON),
    binary: Buffer.from(toBinary(schema, message)).toString("base64"),
  };
  const binaryPath = binaryDir && join(binaryDir, fileName.replace(/\.json$/, ".binpb"));
  if (binaryPath && existsSync(binaryPath)) {
    entry.fromPython = toJson(schema, fromBinary(schema, readFileSync(binaryPath)), CANONICAL_JSON);
  }
  results[fileName] = entry;
}
process.stdout.write(JSON.stringify(results, null, 2) + "\n");
