// The JSON `g5sim run --json` writes, against its documented schema (docs/schema/run.schema.json).
// The validator below implements the part of JSON Schema the file uses: type (one or a list),
// enum, minimum, required, properties, additionalProperties (false or a schema) and items.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "ops/op_kinds.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_json_schema {

namespace {

using nlohmann::json;

std::string source(const std::string& path) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/" + path; }

bool has_type(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  throw std::logic_error("schema: unknown type " + type);
}

// Appends "where: what" for every violation of `schema` by `value`.
void validate(const json& schema, const json& value, const std::string& where, std::vector<std::string>& errors) {
  static const std::vector<std::string> kKnown{"$schema", "$id",     "title",    "description",          "type",
                                               "enum",    "minimum", "required", "additionalProperties", "properties",
                                               "items"};
  for (const auto& [key, unused] : schema.items()) {
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end()) {
      throw std::logic_error("schema: keyword " + key + " not implemented");  // never ignore a rule
    }
  }
  if (schema.contains("type")) {
    const json& type = schema["type"];
    bool ok = false;
    if (type.is_array()) {
      for (const json& t : type) ok = ok || has_type(value, t.get<std::string>());
    } else {
      ok = has_type(value, type.get<std::string>());
    }
    if (!ok) {
      errors.push_back(where + ": expected type " + type.dump() + ", got " + value.dump().substr(0, 40));
      return;
    }
  }
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
    errors.push_back(where + ": " + value.dump() + " is not one of " + schema["enum"].dump());
  }
  if (schema.contains("minimum") && value.is_number() && value.get<double>() < schema["minimum"].get<double>()) {
    errors.push_back(where + ": " + value.dump() + " is below " + schema["minimum"].dump());
  }
  if (value.is_object()) {
    for (const json& key : schema.value("required", json::array())) {
      if (!value.contains(key.get<std::string>())) errors.push_back(where + ": missing " + key.get<std::string>());
    }
    const json properties = schema.value("properties", json::object());
    for (const auto& [key, item] : value.items()) {
      if (properties.contains(key)) {
        validate(properties[key], item, where + "." + key, errors);
      } else if (schema.contains("additionalProperties")) {
        const json& extra = schema["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) {
          errors.push_back(where + ": unexpected key " + key);
        } else if (extra.is_object()) {
          validate(extra, item, where + "." + key, errors);
        }
      }
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      validate(schema["items"], value[i], where + "[" + std::to_string(i) + "]", errors);
    }
  }
}

json schema() {
  std::ifstream in(source("docs/schema/run.schema.json"));
  REQUIRE(in);
  return json::parse(in);
}

std::vector<std::string> errors_of(const std::string& text) {
  std::vector<std::string> errors;
  validate(schema(), json::parse(text), "$", errors);
  return errors;
}

std::string run_json(const std::string& model, g5sim::Request request) {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  return g5sim::simulate(chip, g5sim::Model::from_file(source(model)), request).json();
}

}  // namespace

TEST_CASE("run JSON follows docs/schema/run.schema.json", "[json][schema]") {
  g5sim::Request r;
  r.layers = 5;
  SECTION("a DeepSeek-V3 decode step") { CHECK(errors_of(run_json("configs/models/deepseek-v3.yaml", r)).empty()); }
  SECTION("a block in prefill") {
    r.layers.reset();
    r.scope = "block";
    r.phase = "prefill";
    r.ctx = 256;
    CHECK(errors_of(run_json("configs/models/deepseek-v3.yaml", r)).empty());
  }
  SECTION("a mixed step: decodes, a chunk and a prompt, dealt over dp 2") {
    r.mix = "3x1@4096,1x512@1024,1x256@0";
    r.tp = 1, r.ep = 2, r.dp = 2;
    const json j = json::parse(run_json("configs/models/deepseek-v3.yaml", r));
    CHECK(errors_of(j.dump()).empty());
    CHECK(j["workload"]["phase"] == "mixed");
    CHECK(j["sequences"].size() == 3);
    // The deal: decodes to ranks 0, 1, 0; the chunk to rank 1, the prompt to rank 0. Rank 0 has
    // 2 + 256 = 258 new tokens, rank 1 1 + 512 = 513: rank 1 is simulated.
    CHECK(j["chip_sequences"] == json::parse(R"([{"count": 1, "q_len": 1, "history": 4096, "path": "decode"},
                                                   {"count": 1, "q_len": 512, "history": 1024, "path": "prefill"}])"));
  }
  SECTION("DeepSeek-V3.2: the kv_cache fields agree") {
    const json j = json::parse(run_json("configs/models/deepseek-v3.2-exp.yaml", r));
    CHECK(errors_of(j.dump()).empty());
    // Latent 576 x 2 B = 1,152 plus the indexer's 128 fp8 + 4 B scale = 132: 1,284 B per token
    // per layer; one sequence per chip x 4,096 tokens x 61 layers x 1,284 = 320,815,104 B.
    CHECK(j["kv_cache"]["attention_bytes_per_token_per_layer"] == 1152);
    CHECK(j["kv_cache"]["indexer_bytes_per_token_per_layer"] == 132);
    CHECK(j["kv_cache"]["bytes_per_token_per_layer"] == 1284);
    CHECK(j["kv_cache"]["total_bytes"] == 320'815'104);
  }
  SECTION("a GQA model with two micro-batches: op ids are unique where names repeat") {
    r.micro_batches = 2;
    r.batch = 16;
    const json j = json::parse(run_json("configs/models/llama-3-70b.yaml", r));
    CHECK(errors_of(j.dump()).empty());
    std::vector<std::uint64_t> ids;
    for (const json& op : j["ops"]) {
      ids.push_back(op["id"].get<std::uint64_t>());
      // The ns field is the ps field printed with three decimals.
      CHECK(op["op_start_ps"].get<std::uint64_t>() ==
            static_cast<std::uint64_t>(std::llround(op["op_start_ns"].get<double>() * 1000)));
    }
    std::sort(ids.begin(), ids.end());
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  }
}

TEST_CASE("the schema validator rejects what the schema forbids", "[json][schema]") {
  // Not vacuous: a missing key, a wrong type, an unknown key and an out-of-range enum all fail.
  json j = json::parse(run_json("configs/models/deepseek-v3.yaml", [] {
    g5sim::Request r;
    r.scope = "block";
    return r;
  }()));
  REQUIRE(errors_of(j.dump()).empty());
  json missing = j;
  missing.erase("total_ps");
  CHECK(errors_of(missing.dump()) == std::vector<std::string>{"$: missing total_ps"});
  json wrong = j;
  wrong["ops"][0]["op_start_ps"] = "12";
  CHECK(errors_of(wrong.dump()).size() == 1);
  json extra = j;
  extra["workload"]["surprise"] = 1;
  CHECK(errors_of(extra.dump()) == std::vector<std::string>{"$.workload: unexpected key surprise"});
  json bad = j;
  bad["scope"] = "layer";
  CHECK(errors_of(bad.dump()).size() == 1);
}

TEST_CASE("the schema's op kinds are the op-kind table's, no more and no fewer", "[json][schema]") {
  // ops/op_kinds.cpp is the one declaration of the kinds; the schema's enum must list each name.
  const json kinds = schema()["properties"]["ops"]["items"]["properties"]["kind"]["enum"];
  std::set<std::string> in_schema, in_table;
  for (const json& k : kinds) in_schema.insert(k.get<std::string>());
  for (std::size_t i = 0; i < ops::kOpKindCount; ++i) {
    in_table.insert(std::string(ops::kind_name(static_cast<ops::OpKind>(i))));
  }
  CHECK(in_schema == in_table);
  CHECK(kinds.size() == ops::kOpKindCount);
}

}  // namespace test_json_schema
