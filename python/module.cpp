// The Python extension g5sim._g5sim: g5sim's public C++ API (g5sim/g5sim.hpp) as Python types.
// The package g5sim (python/g5sim/__init__.py) wraps it with the keyword-argument simulate(), the
// dict loaders and the pandas view; this file only converts.
//
// Errors: g5sim::ConfigError becomes g5sim.ConfigError (a ValueError, defined in g5sim/_errors.py
// so that the package owns it) with .source, .field, .line and .column; a Request parameter's
// field is the keyword of simulate() ("ctx", "kv_dtype", "tp"). Anything else the library throws
// is a bug and becomes RuntimeError, whatever its C++ type (pybind11 would turn
// std::invalid_argument into ValueError, which callers would mistake for bad input).
//
// Threads: simulate() and run_cli() release the GIL; the objects they read (Chip, Model) are
// immutable and a Result is built per call, so Python threads may simulate at once.

#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "g5sim/design.hpp"
#include "g5sim/g5sim.hpp"
#include "g5sim/knobs.hpp"
#include "g5sim/reports.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/runs.hpp"
#include "g5sim/runtime.hpp"
#include "g5sim/search.hpp"
#include "g5sim/sensitivity.hpp"
#include "g5sim/serve.hpp"
#include "g5sim/solve.hpp"

namespace py = pybind11;

namespace {

// The Request member or knob a library parameter error names, as Python spells its keyword
// (a knob's keyword where it differs from its name: requests -> num_requests, target -> targets).
std::string keyword_of(const std::string& field) {
  if (const g5sim::RunOption* o = g5sim::find_run_option(field)) return o->name;
  for (const std::vector<g5sim::Knob>* table : {&g5sim::serve_knobs(), &g5sim::design_knobs()}) {
    for (const g5sim::Knob& k : *table) {
      if (k.name == field && !k.keyword.empty()) return k.keyword;
    }
  }
  return field;
}

std::string fmt_range(const std::string& value, const g5sim::RunOption& o) {
  return value + " is outside " + std::to_string(o.min) + ".." + std::to_string(o.max);
}

py::object none_if_zero(int v) { return v == 0 ? py::object(py::none()) : py::object(py::int_(v)); }
py::object none_if_empty(const std::string& s) { return s.empty() ? py::object(py::none()) : py::object(py::str(s)); }

void raise_config_error(const g5sim::ConfigError& e) {
  const bool parameter = e.source().empty() && !e.field().empty();
  const std::string field = parameter ? keyword_of(e.field()) : e.field();
  // A message that already starts with its field's name ("target: ...") is not prefixed again.
  std::string what = e.what();
  if (parameter && what.rfind(e.field() + ": ", 0) == 0) what.erase(0, e.field().size() + 2);
  const std::string message = parameter ? field + ": " + what : what;
  py::object type = py::module_::import("g5sim._errors").attr("ConfigError");
  py::object error =
      type(message, py::arg("source") = none_if_empty(e.source()), py::arg("field") = none_if_empty(field),
           py::arg("line") = none_if_zero(e.line()), py::arg("column") = none_if_zero(e.column()));
  PyErr_SetObject(type.ptr(), error.ptr());
}

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const py::builtin_exception&) {
    throw;  // KeyError and the like, raised on purpose by the bindings
  } catch (const py::error_already_set&) {
    throw;
  } catch (const g5sim::ConfigError& e) {
    raise_config_error(e);
  } catch (const g5sim::Cancelled&) {
    // A signal handler (Ctrl-C) stopped the run: its exception is pending; else KeyboardInterrupt.
    if (PyErr_Occurred() == nullptr) PyErr_SetNone(PyExc_KeyboardInterrupt);
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "g5sim: out of memory");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError,
                    (std::string("g5sim internal error (please report it with the call): ") + e.what()).c_str());
  }
}

// The cancel check of runs started from Python: the interpreter's signal handlers run (on the
// main thread) and a raised exception, KeyboardInterrupt for Ctrl-C, stops the run. It takes the
// GIL for that moment only; the run itself holds none.
bool python_signal_raised(void*) {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

// A run's progress told to a Python callable progress(stage, done, total), with the GIL for that
// moment. An exception it raises stops the run (through the cancel check) and is raised again.
struct PythonProgress {
  py::object callable;
  std::optional<py::error_already_set> failed;

  static void report(void* self, const char* stage, std::uint64_t done, std::uint64_t total) {
    auto& me = *static_cast<PythonProgress*>(self);
    py::gil_scoped_acquire gil;
    if (me.failed) return;
    try {
      me.callable(stage, done, total);
    } catch (py::error_already_set& e) {
      me.failed = std::move(e);
    }
  }
  static bool stop(void* self) {
    auto& me = *static_cast<PythonProgress*>(self);
    py::gil_scoped_acquire gil;
    return me.failed.has_value() || PyErr_CheckSignals() != 0;
  }
};

py::object layer_of(const g5sim::OpRecord& o) {
  return o.layer < 0 ? py::object(py::none()) : py::object(py::int_(o.layer));
}

// An op as the JSON "ops" entry holds it (same keys, same values), plus the exact picoseconds.
py::dict op_dict(const g5sim::OpRecord& o) {
  py::dict d;
  d["id"] = o.id;
  d["name"] = o.name;
  d["layer"] = layer_of(o);
  d["kind"] = o.kind;
  d["shape"] = o.shape;
  d["engines"] = o.engines;
  d["op_start_ns"] = o.op_start_ns();
  d["op_end_ns"] = o.op_end_ns();
  d["op_start_ps"] = o.op_start_ps;
  d["op_end_ps"] = o.op_end_ps;
  d["hbm_bytes"] = o.hbm_bytes;
  d["unique_bytes"] = o.unique_bytes;
  d["c2c_bytes"] = o.c2c_bytes;
  d["flops"] = o.flops;
  d["kv_bytes"] = o.kv_bytes;
  d["peak_lmem_bytes"] = o.peak_lmem_bytes;
  d["roofline_ns"] = o.roofline_ns;
  d["regime"] = o.regime;
  d["bound_by"] = o.bound_by;
  d["bound_share"] = o.bound_share;
  d["idle_gap_ns"] = static_cast<double>(o.idle_gap_ps) / 1000.0;
  d["idle_gap_ps"] = o.idle_gap_ps;
  return d;
}

py::object python_value(const g5sim::OptionValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return py::none();
        } else {
          return py::cast(v);
        }
      },
      value);
}

[[noreturn]] void argument_error(const g5sim::RunOption& o, const std::string& message) {
  throw g5sim::ConfigError(message, "", o.name, 0, 0);
}

// A keyword's Python value as the table's type, with Python's words for a wrong one (the
// library checks ranges and emptiness).
g5sim::OptionValue option_value(const g5sim::RunOption& o, const py::handle& v) {
  if (v.is_none()) return std::monostate{};
  const std::string repr = py::repr(v);
  switch (o.type) {
    case g5sim::OptionType::count: {
      const py::object integral = py::module_::import("numbers").attr("Integral");
      if (py::isinstance<py::bool_>(v) || !py::isinstance(v, integral)) {
        argument_error(o, "expected a whole number, got " + repr);
      }
      const py::int_ n(py::reinterpret_borrow<py::object>(v));
      if (n < py::int_(0) || n > py::int_(o.max)) {
        argument_error(o, fmt_range(py::str(static_cast<const py::object&>(n)).cast<std::string>(), o));
      }
      return n.cast<std::uint64_t>();
    }
    case g5sim::OptionType::text:
      if (!py::isinstance<py::str>(v)) argument_error(o, "expected a string, got " + repr);
      return v.cast<std::string>();
    case g5sim::OptionType::path: {
      const py::object os_path_like = py::module_::import("os").attr("PathLike");
      if (!py::isinstance<py::str>(v) && !py::isinstance(v, os_path_like)) {
        argument_error(o, "expected a path, got " + repr);
      }
      return py::module_::import("os").attr("fspath")(v).cast<std::string>();
    }
    case g5sim::OptionType::flag:
      if (!py::isinstance<py::bool_>(v)) argument_error(o, "expected True or False, got " + repr);
      return v.cast<bool>();
  }
  return std::monostate{};
}

py::list run_option_dicts() {
  static const char* const kTypes[] = {"count", "text", "path", "flag"};
  py::list out;
  const g5sim::Request defaults;
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    py::dict d;
    d["name"] = o.name;
    d["flag"] = o.flag;
    d["type"] = kTypes[static_cast<int>(o.type)];
    d["min"] = o.min;
    d["max"] = o.max;
    d["optional"] = o.optional;
    py::list choices;
    for (std::size_t i = 0; !o.choices.empty() && i != std::string::npos;) {
      const std::size_t comma = o.choices.find(',', i);
      choices.append(o.choices.substr(i, comma == std::string::npos ? std::string::npos : comma - i));
      i = comma == std::string::npos ? comma : comma + 1;
    }
    d["choices"] = choices;
    d["default"] = python_value(g5sim::get_option(defaults, o));
    d["default_doc"] = o.default_doc;
    d["unit"] = o.unit;
    d["doc"] = o.doc;
    d["run"] = (o.takes & g5sim::kRun) != 0;
    d["grid_axis"] = (o.takes & g5sim::kGridAxis) != 0;
    d["serve"] = (o.takes & g5sim::kServe) != 0;
    d["json_key"] = o.json_key;
    d["scoped"] = o.scoped;
    d["column"] = o.column;
    out.append(d);
  }
  return out;
}

py::list knob_dicts() {
  static const char* const kTypes[] = {"count", "decimal", "text", "path", "flag", "list"};
  py::list out;
  for (const std::vector<g5sim::Knob>* table : {&g5sim::serve_knobs(), &g5sim::design_knobs()}) {
    for (const g5sim::Knob& k : *table) {
      py::dict d;
      d["name"] = k.name;
      d["keyword"] = k.python();
      d["flag"] = k.flag;
      d["type"] = kTypes[static_cast<int>(k.type)];
      d["min"] = k.min;
      d["max"] = k.max;
      d["low"] = k.low;
      d["high"] = k.high;
      d["low_open"] = k.low_open;
      d["optional"] = k.optional;
      d["choices"] = k.choices;
      d["default"] = k.default_text;
      d["default_doc"] = k.default_doc;
      d["unit"] = k.unit;
      d["doc"] = k.doc;
      d["group"] = k.group;
      d["pair"] = k.pair;
      d["run_option"] = k.run_option;
      d["table"] = table == &g5sim::serve_knobs() ? "serve" : "design";
      for (const auto& [use, name] : {std::pair{g5sim::kServeKnob, "serve"},
                                      {g5sim::kServeItem, "serve_item"},
                                      {g5sim::kSearchKnob, "search"},
                                      {g5sim::kSearchList, "search_list"},
                                      {g5sim::kSweepAxis, "sweep_axis"},
                                      {g5sim::kSensitivityKnob, "sensitivity"},
                                      {g5sim::kSolveKnob, "solve"}}) {
        d[name] = k.takes_in(use);
      }
      out.append(d);
    }
  }
  return out;
}

// g5sim.reports(): every report's fields (g5sim/reports.hpp), one dict per report.
py::list report_dicts() {
  py::list out;
  for (const g5sim::Report& r : g5sim::all_reports()) {
    py::list fields;
    for (const g5sim::ReportField& f : r.fields) {
      py::dict d;
      d["path"] = f.path;
      d["type"] = std::string(g5sim::name_of(f.type));
      d["unit"] = f.unit;
      d["description"] = f.description;
      d["choices"] = f.choices;
      d["minimum"] = f.minimum ? py::object(py::float_(*f.minimum)) : py::object(py::none());
      d["nullable"] = f.nullable;
      d["when"] = f.when;
      fields.append(d);
    }
    py::dict d;
    d["name"] = r.name;
    d["format"] = std::string(g5sim::name_of(r.format));
    d["command"] = r.command;
    d["schema_version"] = r.schema_version;
    d["description"] = r.description;
    d["fields"] = fields;
    out.append(d);
  }
  return out;
}

// Runs `write` without the GIL, its outputs as texts (the command line's bytes).
template <class Write>
std::tuple<std::string, std::string, std::string> texts(Write&& write) {
  std::ostringstream table, csv, json;
  {
    py::gil_scoped_release release;
    write(table, csv, json);
  }
  return {table.str(), csv.str(), json.str()};
}

// A runtime config's fields, as the YAML groups them.
py::dict runtime_dict(const std::string& name_or_path) {
  const g5sim::Runtime& r = g5sim::runtime_named(name_or_path);
  const auto costs = [](const g5sim::KernelCosts& k) {
    py::dict d;
    d["floor_ns"] = k.floor_ns;
    d["gap_ns"] = k.gap_ns;
    d["launch_ns"] = k.launch_ns;
    d["expert_launch_ns"] = k.expert_launch_ns;
    return d;
  };
  const auto table = [](const std::vector<g5sim::CollectiveLatency>& rows) {
    py::list out;
    for (const g5sim::CollectiveLatency& row : rows) {
      py::dict d;
      d["up_to_bytes"] = row.up_to_bytes ? py::object(py::int_(*row.up_to_bytes)) : py::object(py::none());
      d["algorithm"] = row.algorithm;
      d["latency_ns"] = row.latency_ns;
      out.append(d);
    }
    return out;
  };
  py::dict kernels, collectives, step, request, graph, scheduler, d;
  kernels["graph_max_batch"] = r.graph_max_batch;
  kernels["piecewise_max_tokens"] = r.piecewise_max_tokens;
  kernels["graph"] = costs(r.graph);
  kernels["eager"] = costs(r.eager);
  kernels["fused_kinds"] = r.fused_kinds;
  kernels["tensor_efficiency"] = r.tensor_efficiency;
  kernels["expert_tensor_efficiency"] = r.expert_tensor_efficiency;
  collectives["all_reduce"] = table(r.all_reduce);
  collectives["all_to_all"] = table(r.all_to_all);
  step["cpu_ns"] = r.cpu_ns;
  step["cpu_ns_per_sequence"] = r.cpu_ns_per_sequence;
  step["cpu_ns_per_token"] = r.cpu_ns_per_token;
  step["overlap"] = r.overlap;
  request["before_scheduler_ns"] = r.before_scheduler_ns;
  request["serial_ns"] = r.serial_ns;
  request["serial_ns_per_input_token"] = r.serial_ns_per_input_token;
  request["serial_ns_per_output_token"] = r.serial_ns_per_output_token;
  request["tokens_behind_inputs"] = r.tokens_behind_inputs;
  request["per_input_token_ns"] = r.per_input_token_ns;
  request["after_token_ns"] = r.after_token_ns;
  graph["kv_append"] = r.kv_append;
  graph["lm_head_weights"] = r.lm_head_weights;
  graph["prefill_attention"] = r.prefill_attention;
  scheduler["schedule"] = r.schedule;
  scheduler["max_seqs"] = r.max_seqs;
  scheduler["max_batched_tokens"] = r.max_batched_tokens;
  scheduler["per_dp_rank"] = r.scheduler_per_dp_rank;
  scheduler["first_token"] = r.first_token;
  py::dict layers;
  layers["host_launch_ns"] = r.host_launch_ns;
  for (auto [key, value] : {std::pair<const char*, py::object>{"name", py::str(r.name)},
                            {"version", py::str(r.version)},
                            {"adds", py::str(r.adds)},
                            {"source", py::str(r.source)},
                            {"sha256", py::str(r.sha256)},
                            {"kernels", kernels},
                            {"collectives", collectives},
                            {"layers", layers},
                            {"step", step},
                            {"request", request},
                            {"graph", graph},
                            {"scheduler", scheduler}}) {
    d[key] = value;
  }
  return d;
}

// The version and where configs are: the shipped folder, chips and models, names to paths.
// A KV tier file as a dict (g5sim/serve.hpp, KvTiers).
py::dict kv_tiers_dict(const std::string& name_or_path) {
  const g5sim::KvTiers t = g5sim::load_kv_tiers(name_or_path);
  py::list tiers;
  for (const g5sim::KvTier& k : t.tiers) {
    py::dict d;
    d["name"] = k.name;
    d["capacity_bytes"] = k.capacity_bytes;
    d["bandwidth_gb_per_s"] = k.bandwidth_gb_per_s;
    d["latency_ns"] = static_cast<double>(k.latency_ps) / 1000.0;
    tiers.append(d);
  }
  py::dict out;
  out["name"] = t.name;
  out["source"] = t.source;
  out["tiers"] = tiers;
  return out;
}

void bind_path_functions(py::module_& m) {
  m.def("version", &g5sim::version, "The version, 'MAJOR.MINOR.PATCH'.");
  m.def("data_dir", &g5sim::data_dir,
        "The folder of the shipped configs (G5SIM_DATA_DIR, else share/g5sim above this module).");
  m.def("shipped_chip_path", &g5sim::shipped_chip_path, "The shipped SG2262 chip config.");
  m.def("shipped_model_path", &g5sim::shipped_model_path, "The shipped DeepSeek-V3 model config.");
  m.def("shipped_chips", &g5sim::shipped_chips, "The shipped chip configs' stems, sorted ('h100', ...).");
  m.def("shipped_models", &g5sim::shipped_models, "The shipped model configs' stems, sorted ('deepseek-v3', ...).");
  m.def("shipped_runtimes", &g5sim::shipped_runtimes,
        "The shipped runtime configs' stems, sorted ('none', 'sglang', ...): configs/runtimes/.");
  m.def("runtime_path", &g5sim::runtime_path, py::arg("name_or_path"),
        "The file a runtime is named by: a path as it is, or a shipped config's stem ('sglang').");
  m.def("shipped_kv_tiers", &g5sim::shipped_kv_tiers,
        "The shipped hosts' KV tier files' stems, sorted ('host-dram-ssd', ...): configs/hosts/.");
  m.def("kv_tiers_path", &g5sim::kv_tiers_path, py::arg("name_or_path"),
        "The file a host's KV tiers are named by: a path as it is, or a shipped config's stem.");
  m.def("kv_tiers", &kv_tiers_dict, py::arg("name_or_path"),
        "A KV tier file (serve's kv_tiers) as a dict: its name, source and tiers, nearest the chip first, each "
        "with capacity_bytes, bandwidth_gb_per_s and latency_ns. Raises ConfigError naming the file, line and "
        "field.");
  m.def("runtime", &runtime_dict, py::arg("name_or_path"),
        "A runtime config's fields as a dict (g5sim/runtime.hpp): its kernel, collective, layer, step and "
        "request costs, its graph choices and scheduler. Raises ConfigError naming the file, line and field.");
  m.def("chip_path", &g5sim::chip_path, py::arg("name_or_path"),
        "The file a chip is named by: a path as it is, or a shipped config's stem ('h100').");
  m.def("model_path", &g5sim::model_path, py::arg("name_or_path"),
        "The file a model is named by: a path as it is, or a shipped config's stem ('deepseek-v3').");
}

// Questions about inputs and outputs: option rules, check, diff, the report and knob tables.
void bind_inspection_functions(py::module_& m) {
  m.def("why_option_does_not_apply", &g5sim::why_option_does_not_apply, py::arg("field"), py::arg("model"),
        py::arg("request"),
        "Why the Request field changes nothing for this model and request ('' when it applies): "
        "the run-option table's rules (g5sim/run_options.hpp), as the command line applies them.");
  m.def("check_report", &g5sim::check_report, py::arg("chip"), py::arg("model"),
        "What `g5sim check` prints of a chip and a model before its 'ok': identities, peaks, DMA channels "
        "against DDR, the FFN, parameters and KV bytes per token.");
  m.def(
      "diff_json",
      [](const std::string& a, const std::string& a_name, const std::string& b, const std::string& b_name,
         std::size_t top) { return g5sim::diff_json(a, a_name, b, b_name, top); },
      py::arg("a"), py::arg("a_name"), py::arg("b"), py::arg("b_name"), py::arg("top"),
      "`g5sim diff --json -` of two run JSON texts.");
  m.def("reports", &report_dicts,
        "Every report's fields (g5sim/report_fields.hpp): a dict per report (name, format, command, schema_version, "
        "description, fields), each field a dict (path, type, unit, description, choices, minimum, nullable, when).");
  m.def("knobs", &knob_dicts,
        "The knob tables (g5sim/knobs.hpp, g5sim/design.hpp): one dict per knob of serve, search, sensitivity and "
        "solve, in documentation order.");
}

// The serve and sensitivity commands, their outputs as the command line's texts.
void bind_serve_sensitivity_texts(py::module_& m) {
  m.def(
      "serve_texts",
      [](const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& request,
         const g5sim::KnobItems& items, std::optional<std::string> trace_text, bool perfetto,
         const std::optional<py::function>& progress) {
        const g5sim::Request step = request;
        std::ostringstream csv, json, trace;
        {
          py::gil_scoped_release release;
          g5sim::ServeSettings settings;
          for (const auto& [knob, text] : items) settings.set_text(knob, text);
          settings.trace_text = std::move(trace_text);
          g5sim::ServeControls controls;
          if (progress) {
            // After each finished request; what it raises ends the serve with that error. Under
            // step_cache auto the serve passes over its requests more than once: told only as the
            // furthest pass gets further, so that `done` never goes back.
            controls.progress = [&progress, furthest = std::uint64_t{0}](const g5sim::ServeProgress& p) mutable {
              if (p.requests_done <= furthest) return;
              furthest = p.requests_done;
              py::gil_scoped_acquire acquire;
              (*progress)(p.requests_done, p.requests);
            };
          }
          const g5sim::ServeReport report = g5sim::serve(chip, model, step, settings, controls);
          g5sim::write_request_csv(csv, report);
          g5sim::write_serve_json(json, report);
          if (perfetto) g5sim::write_serve_perfetto(trace, report);
        }
        return std::make_tuple(csv.str(), json.str(), trace.str());
      },
      py::arg("chip"), py::arg("model"), py::arg("request"), py::arg("items"), py::arg("trace_text"),
      py::arg("perfetto"), py::arg("progress") = py::none(),
      "`g5sim serve`: the per-request CSV, the summary JSON and (perfetto) the Chrome trace, byte for byte the "
      "command line's; items: (knob, text) of the serve table (g5sim.knobs()); progress(done, total) after each "
      "finished request. Releases the GIL.");
  m.def(
      "sensitivity_texts",
      [](const std::string& chip_text, const std::string& chip_source, const g5sim::Model& model,
         const g5sim::Request& request, const g5sim::KnobItems& items) {
        const g5sim::SensitivitySpec spec =
            g5sim::sensitivity_spec_of(g5sim::ChipText{chip_text, chip_source}, model, request, items);
        return texts([&](std::ostream& table, std::ostream& csv, std::ostream& json) {
          const g5sim::SensitivityReport report = g5sim::sensitivity(spec);
          g5sim::write_sensitivity_table(table, report);
          g5sim::write_sensitivity_csv(csv, report);
          g5sim::write_sensitivity_json(json, report);
        });
      },
      py::arg("chip_text"), py::arg("chip_source"), py::arg("model"), py::arg("request"), py::arg("items"),
      "`g5sim sensitivity`: its table, CSV and JSON, byte for byte the command line's (g5sim.sensitivity() "
      "reads them). Releases the GIL.");
}

// The search and solve commands, their outputs as the command line's texts, and the grid's nesting.
void bind_search_solve_texts(py::module_& m) {
  m.def(
      "search_texts",
      [](const std::vector<g5sim::Chip>& chips, const g5sim::Model& model, const g5sim::Request& request,
         const g5sim::KnobItems& items, std::optional<py::function> run_pass,
         const std::optional<py::function>& progress) {
        const g5sim::SearchSpec spec = g5sim::search_spec_of(chips, model, request, items);
        return texts([&](std::ostream& table, std::ostream& csv, std::ostream& json) {
          g5sim::SearchReport report;
          if (run_pass) {
            // The points of each pass run where the Python caller sends them (Dask's workers),
            // their outcomes back as text.
            report = g5sim::search_with(spec, [&](const std::vector<std::size_t>& pass) {
              py::gil_scoped_acquire acquire;
              const auto outcomes = (*run_pass)(pass).cast<std::vector<std::string>>();
              std::vector<g5sim::PointOutcome> out;
              for (const std::string& t : outcomes) out.push_back(g5sim::outcome_of_text(t));
              return out;
            });
          } else {
            // After each point, from the point's thread (the search serialises the calls); total:
            // the points of the passes so far.
            std::function<void(std::size_t, std::size_t, std::uint64_t)> told;
            if (progress) {
              told = [&progress](std::size_t done, std::size_t total, std::uint64_t) {
                py::gil_scoped_acquire acquire;
                (*progress)(done, total);
              };
            }
            report = g5sim::search(spec, told);
          }
          g5sim::write_search_table(table, report);
          g5sim::write_search_csv(csv, report);
          g5sim::write_search_json(json, report);
        });
      },
      py::arg("chips"), py::arg("model"), py::arg("request"), py::arg("items"), py::arg("run_pass"),
      py::arg("progress") = py::none(),
      "`g5sim search`: its table, CSV and JSON, byte for byte the command line's; run_pass(indices) -> outcome "
      "texts runs each pass's points elsewhere (None: on the jobs keyword's threads; then progress(done, total) "
      "after each point, total the points of the passes so far). Releases the GIL.");
  m.def(
      "search_point_text",
      [](const std::vector<g5sim::Chip>& chips, const g5sim::Model& model, const g5sim::Request& request,
         const g5sim::KnobItems& items, std::size_t index) {
        const g5sim::DeploymentSearch search(g5sim::search_spec_of(chips, model, request, items));
        if (index >= search.grid_size()) throw py::index_error("search: no such point");
        py::gil_scoped_release release;
        return g5sim::outcome_text(search.run(index));
      },
      py::arg("chips"), py::arg("model"), py::arg("request"), py::arg("items"), py::arg("index"),
      "One point of a search served (where a Dask worker runs it): its outcome as text for search_texts.");
  m.def(
      "solve_texts",
      [](const std::string& chip_text, const std::string& chip_source, const g5sim::Model& model,
         const g5sim::Request& request, const g5sim::KnobItems& items) {
        const g5sim::SolveSpec spec =
            g5sim::solve_spec_of(g5sim::ChipText{chip_text, chip_source}, model, request, items);
        return texts([&](std::ostream& table, std::ostream& csv, std::ostream& json) {
          const g5sim::SolveReport report = g5sim::solve(spec);
          g5sim::write_solve_table(table, report);
          g5sim::write_solve_csv(csv, report);
          g5sim::write_solve_json(json, report);
        });
      },
      py::arg("chip_text"), py::arg("chip_source"), py::arg("model"), py::arg("request"), py::arg("items"),
      "`g5sim solve`: its table, CSV and JSON, byte for byte the command line's (g5sim.solve() reads them). "
      "Releases the GIL.");
  m.def("grid_nesting", &g5sim::sweep_nesting,
        "The grid axes but the context, outermost first, as `g5sim sweep` nests them (the context innermost).");
}

// The module-level functions: paths, version, option rules, the command line.
void bind_functions(py::module_& m) {
  bind_path_functions(m);
  bind_inspection_functions(m);
  bind_serve_sensitivity_texts(m);
  bind_search_solve_texts(m);
}

// Chip: a loaded chip config.
void bind_chip(py::module_& m) {
  py::class_<g5sim::Chip>(m, "Chip", "A chip config (load it with g5sim.load_chip).")
      .def_static("from_file", &g5sim::Chip::from_file, py::arg("path"))
      .def_static("from_yaml", &g5sim::Chip::from_yaml, py::arg("text"), py::arg("source"))
      .def_static("from_document", &g5sim::Chip::from_document, py::arg("json_text"), py::arg("source"))
      .def_property_readonly("name", &g5sim::Chip::name)
      .def_property_readonly("source", &g5sim::Chip::source)
      .def_property_readonly("cores", &g5sim::Chip::cores)
      .def_property_readonly("engines", &g5sim::Chip::engines, "A core's engines, in declaration order.")
      .def_property_readonly("ddr_capacity_bytes", &g5sim::Chip::ddr_capacity_bytes)
      .def_property_readonly("summary", &g5sim::Chip::summary, "One line: name, cores, bf16 peak, DDR (g5sim list).")
      .def_property_readonly("calibration_summary", &g5sim::Chip::calibration_summary,
                             "A calibrated config's fit and fitted fields in one line (g5sim list); '' otherwise.")
      .def_property_readonly("sha256", &g5sim::Chip::sha256, "SHA-256 of the text it was read from, 64 hex digits.")
      .def("with_cores", &g5sim::Chip::with_cores, py::arg("cores"), "The same chip with only its first `cores` cores.")
      .def("__repr__", [](const g5sim::Chip& c) {
        return "<g5sim.Chip " + c.name() + " (" + std::to_string(c.cores()) + " cores) from " + c.source() + ">";
      });
}

// Model and its schema enum.
void bind_model(py::module_& m) {
  py::enum_<g5sim::ModelSchema>(m, "ModelSchema")
      .value("g5sim", g5sim::ModelSchema::g5sim)
      .value("hugging_face", g5sim::ModelSchema::hugging_face);

  py::class_<g5sim::Model>(m, "Model", "A model config (load it with g5sim.load_model).")
      .def_static("from_file", &g5sim::Model::from_file, py::arg("path"))
      .def_static("from_yaml", &g5sim::Model::from_yaml, py::arg("text"), py::arg("source"))
      .def_static("from_document", &g5sim::Model::from_document, py::arg("json_text"), py::arg("source"),
                  py::arg("schema"))
      .def_property_readonly("name", &g5sim::Model::name)
      .def_property_readonly("source", &g5sim::Model::source)
      .def_property_readonly("model_type", &g5sim::Model::model_type)
      .def_property_readonly("attention", &g5sim::Model::attention, "'mla' or 'gqa'.")
      .def_property_readonly("num_hidden_layers", &g5sim::Model::num_hidden_layers)
      .def_property_readonly("num_attention_heads", &g5sim::Model::num_attention_heads)
      .def_property_readonly("kv_lora_rank", &g5sim::Model::kv_lora_rank, "0 unless MLA.")
      .def_property_readonly("qk_rope_head_dim", &g5sim::Model::qk_rope_head_dim, "0 unless MLA.")
      .def_property_readonly("latent_kv_elements", &g5sim::Model::latent_kv_elements,
                             "kv_lora_rank + qk_rope_head_dim per token per layer; 0 unless MLA.")
      .def_property_readonly("parameter_count", &g5sim::Model::parameter_count,
                             "Every weight of every layer, the embedding and lm_head, the norms.")
      .def_property_readonly("sha256", &g5sim::Model::sha256, "SHA-256 of the text it was read from, 64 hex digits.")
      .def_property_readonly("summary", &g5sim::Model::summary,
                             "One line: name, type, layers, attention, FFN, "
                             "parameters (g5sim list).")
      .def("__repr__", [](const g5sim::Model& x) {
        return "<g5sim.Model " + x.name() + " (" + x.model_type() + ") from " + x.source() + ">";
      });
}

// Request: one property per row of the run-option table, and the table itself.
void bind_request(py::module_& m) {
  // Request's properties come from the run-option table: one per row, checked on assignment.
  py::class_<g5sim::Request> request_class(
      m, "Request", "One run's parameters (the run-option table's rows); g5sim.simulate() fills it.");
  request_class.def(py::init<>());
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    const g5sim::RunOption* option = &o;
    request_class.def_property(
        o.name.c_str(), [option](const g5sim::Request& r) { return python_value(g5sim::get_option(r, *option)); },
        [option](g5sim::Request& r, const py::object& v) { g5sim::set_option(r, *option, option_value(*option, v)); },
        o.doc.c_str());
  }
  m.def("run_options", &run_option_dicts,
        "The run-option table (g5sim/run_options.hpp): one dict per option, in simulate()'s keyword order.");
  m.def(
      "run_limits",
      [] {
        const g5sim::RunLimits& l = g5sim::run_limits();
        py::dict d;
        d["max_grid_points"] = l.max_grid_points;
        d["max_context_list"] = l.max_context_list;
        d["max_jobs"] = l.max_jobs;
        return d;
      },
      "The limits the command line puts on a grid: points, contexts of one list, jobs.");
}

// Op and Kind: the JSON ops and kinds entries.
void bind_records(py::module_& m) {
  py::class_<g5sim::OpRecord>(m, "Op", "One op of a run: the JSON 'ops' entry, with exact picosecond times.")
      .def_readonly("id", &g5sim::OpRecord::id, "Unique in the run (name and layer repeat with micro-batches).")
      .def_readonly("name", &g5sim::OpRecord::name)
      .def_property_readonly("layer", &layer_of, "Decoder layer, or None outside the layers.")
      .def_readonly("kind", &g5sim::OpRecord::kind)
      .def_readonly("shape", &g5sim::OpRecord::shape)
      .def_readonly("engines", &g5sim::OpRecord::engines)
      .def_readonly("op_start_ps", &g5sim::OpRecord::op_start_ps, "Start, exact integer picoseconds.")
      .def_readonly("op_end_ps", &g5sim::OpRecord::op_end_ps, "End, exact integer picoseconds.")
      .def_property_readonly("op_start_ns", &g5sim::OpRecord::op_start_ns, "Start in ns, as the JSON prints it.")
      .def_property_readonly("op_end_ns", &g5sim::OpRecord::op_end_ns, "End in ns, as the JSON prints it.")
      .def_readonly("hbm_bytes", &g5sim::OpRecord::hbm_bytes)
      .def_readonly("unique_bytes", &g5sim::OpRecord::unique_bytes)
      .def_readonly("c2c_bytes", &g5sim::OpRecord::c2c_bytes)
      .def_readonly("flops", &g5sim::OpRecord::flops)
      .def_readonly("kv_bytes", &g5sim::OpRecord::kv_bytes)
      .def_readonly("peak_lmem_bytes", &g5sim::OpRecord::peak_lmem_bytes)
      .def_readonly("roofline_ns", &g5sim::OpRecord::roofline_ns)
      .def_readonly("regime", &g5sim::OpRecord::regime, "The roofline's verdict: compute, memory or comm.")
      .def_readonly("bound_by", &g5sim::OpRecord::bound_by,
                    "What limited it in the simulation: TIU, a DMA engine, DDR, C2C, L2, or latency.")
      .def_readonly("bound_share", &g5sim::OpRecord::bound_share, "How busy that resource was, 0..1.")
      .def_readonly("idle_gap_ps", &g5sim::OpRecord::idle_gap_ps,
                    "The tensor engine's idle time before its first instruction (largest over cores), ps.")
      .def_readonly("energy_j", &g5sim::OpRecord::energy_j,
                    "Its dynamic energy, J, on a chip with an `energy` section (else 0; the JSON entry's energy_j).")
      .def("to_dict", &op_dict, "The JSON entry's keys and values.")
      .def("__repr__", [](const g5sim::OpRecord& o) {
        return "<g5sim.Op " + o.name + (o.layer >= 0 ? " layer " + std::to_string(o.layer) : std::string()) + " " +
               std::to_string(o.op_start_ps) + ".." + std::to_string(o.op_end_ps) + " ps>";
      });

  py::class_<g5sim::RuntimeParts>(m, "RuntimeParts",
                                  "What a runtime added to a run (g5sim/runtime.hpp), by part, in picoseconds.")
      .def_readonly("kernel_mode", &g5sim::RuntimeParts::kernel_mode)
      .def_readonly("kernels", &g5sim::RuntimeParts::kernels)
      .def_readonly("collectives", &g5sim::RuntimeParts::collectives)
      .def_readonly("layer_launches", &g5sim::RuntimeParts::layer_launches)
      .def_readonly("kernel_floor_ps", &g5sim::RuntimeParts::kernel_floor_ps)
      .def_readonly("kernel_compute_ps", &g5sim::RuntimeParts::kernel_compute_ps)
      .def_readonly("kernel_gap_ps", &g5sim::RuntimeParts::kernel_gap_ps)
      .def_readonly("kernel_launch_ps", &g5sim::RuntimeParts::kernel_launch_ps)
      .def_readonly("collective_ps", &g5sim::RuntimeParts::collective_ps)
      .def_readonly("layer_launch_ps", &g5sim::RuntimeParts::layer_launch_ps)
      .def_readonly("step_cpu_ps", &g5sim::RuntimeParts::step_cpu_ps)
      .def_property_readonly("total_ps", &g5sim::RuntimeParts::total_ps);

  py::class_<g5sim::SequenceRecord>(m, "SequenceGroup",
                                    "One group of a step's sequences: count sequences of q_len new tokens after "
                                    "history cached tokens, on the decode or prefill path.")
      .def_readonly("count", &g5sim::SequenceRecord::count)
      .def_readonly("q_len", &g5sim::SequenceRecord::q_len)
      .def_readonly("history", &g5sim::SequenceRecord::history)
      .def_readonly("path", &g5sim::SequenceRecord::path)
      .def("__repr__", [](const g5sim::SequenceRecord& g) {
        return "<g5sim.SequenceGroup " + std::to_string(g.count) + "x" + std::to_string(g.q_len) + "@" +
               std::to_string(g.history) + " " + g.path + ">";
      });

  py::class_<g5sim::KindRecord>(m, "Kind", "All ops of one kind: busy_ps is the union of their intervals.")
      .def_readonly("kind", &g5sim::KindRecord::kind)
      .def_readonly("ops", &g5sim::KindRecord::ops)
      .def_readonly("busy_ps", &g5sim::KindRecord::busy_ps)
      .def_property_readonly("busy_ns",
                             [](const g5sim::KindRecord& k) { return static_cast<double>(k.busy_ps) / 1000.0; })
      .def_readonly("hbm_bytes", &g5sim::KindRecord::hbm_bytes)
      .def_readonly("c2c_bytes", &g5sim::KindRecord::c2c_bytes)
      .def_readonly("flops", &g5sim::KindRecord::flops)
      .def_readonly("regime", &g5sim::KindRecord::regime)
      .def_readonly("bound_by", &g5sim::KindRecord::bound_by)
      .def_readonly("energy_j", &g5sim::KindRecord::energy_j, "Its ops' dynamic energy, J (0 without `energy`).")
      .def("__repr__", [](const g5sim::KindRecord& k) {
        return "<g5sim.Kind " + k.kind + " x" + std::to_string(k.ops) + " busy " + std::to_string(k.busy_ps) + " ps>";
      });
}

// One op alone (g5sim/op_run.hpp): `g5sim op matmul | fa2`.
void bind_op_runs(py::module_& m) {
  py::class_<g5sim::OpResult>(m, "OpResult", "One op alone on a chip: `g5sim op matmul | fa2`.")
      .def_readonly("op", &g5sim::OpResult::op)
      .def_readonly("shape", &g5sim::OpResult::shape)
      .def_readonly("cores", &g5sim::OpResult::cores)
      .def_readonly("total_ps", &g5sim::OpResult::total_ps, "End of its last command, exact integer picoseconds.")
      .def_readonly("ddr_bytes", &g5sim::OpResult::ddr_bytes)
      .def_readonly("unique_bytes", &g5sim::OpResult::unique_bytes)
      .def_readonly("peak_lmem_bytes", &g5sim::OpResult::peak_lmem_bytes)
      .def_readonly("flops", &g5sim::OpResult::flops)
      .def_readonly("commands", &g5sim::OpResult::commands)
      .def_readonly("tiu_utilization", &g5sim::OpResult::tiu_utilization)
      .def_readonly("c2c_bytes", &g5sim::OpResult::c2c_bytes, "Bytes a collective sent to other chips.")
      .def_readonly("has_energy", &g5sim::OpResult::has_energy, "The chip has an `energy` section.")
      .def_readonly("energy_j", &g5sim::OpResult::energy_j, "Dynamic + static energy over total_ps, J.")
      .def_readonly("dynamic_energy_j", &g5sim::OpResult::dynamic_energy_j,
                    "MACs x pJ/MAC + vector elements x pJ/element + bytes x pJ/byte at each resource crossed.")
      .def_readonly("static_energy_j", &g5sim::OpResult::static_energy_j, "The cores' static power x total_ps.")
      .def("json", &g5sim::OpResult::json, "`g5sim op ... --json`, byte for byte.")
      .def("table", &g5sim::OpResult::table, "The table `g5sim op` prints, byte for byte.")
      .def("__repr__", [](const g5sim::OpResult& r) {
        return "<g5sim.OpResult " + r.op + " " + r.shape + ": " + std::to_string(r.total_ps) + " ps>";
      });
  m.def(
      "simulate_matmul",
      [](const g5sim::Chip& chip, std::uint64_t m_, std::uint64_t n, std::uint64_t k, const std::string& dtype,
         std::uint32_t cores) {
        py::gil_scoped_release release;
        return g5sim::simulate_matmul(chip, {m_, n, k, dtype}, cores);
      },
      py::arg("chip"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype") = "bf16", py::arg("cores") = 0,
      "[m, k] x [k, n] alone on `cores` cores (0: all). Releases the GIL.");
  m.def(
      "simulate_attention",
      [](const g5sim::Chip& chip, std::uint64_t kv_len, std::uint64_t heads, std::uint64_t qk_dim, std::uint64_t v_dim,
         std::uint64_t batch, std::uint64_t q_len, std::uint64_t kv_heads, bool shared_kv, bool causal,
         std::uint32_t cores) {
        py::gil_scoped_release release;
        return g5sim::simulate_attention(
            chip, {batch, q_len, kv_len, heads, kv_heads, qk_dim, v_dim, shared_kv, causal}, cores);
      },
      py::arg("chip"), py::kw_only(), py::arg("kv_len"), py::arg("heads"), py::arg("qk_dim"), py::arg("v_dim"),
      py::arg("batch") = 1, py::arg("q_len") = 1, py::arg("kv_heads") = 1, py::arg("shared_kv") = false,
      py::arg("causal") = false, py::arg("cores") = 0,
      "Flash attention alone (`g5sim op fa2`; decode when q_len < kv_len). Releases the GIL.");
  m.def(
      "simulate_collective",
      [](const g5sim::Chip& chip, const std::string& kind, std::uint64_t bytes, std::uint64_t chips) {
        py::gil_scoped_release release;
        return g5sim::simulate_collective(chip, {kind, bytes, chips});
      },
      py::arg("chip"), py::arg("kind"), py::kw_only(), py::arg("bytes"), py::arg("chips"),
      "A collective alone (`g5sim op all_reduce | all_to_all`): `bytes` per chip among `chips` chips. Releases "
      "the GIL.");
}

// Result's identity: chip, model and their sources, the workload, the sharding.
void bind_result_identity(py::class_<g5sim::Result>& result) {
  result.def_readonly("chip", &g5sim::Result::chip)
      .def_readonly("model", &g5sim::Result::model)
      .def_readonly("scope", &g5sim::Result::scope)
      .def_readonly("layers", &g5sim::Result::layers)
      .def_readonly("micro_batches", &g5sim::Result::micro_batches)
      .def_readonly("host_launch_ns", &g5sim::Result::host_launch_ns)
      .def_readonly("phase", &g5sim::Result::phase)
      .def_readonly("batch", &g5sim::Result::batch)
      .def_readonly("q_len", &g5sim::Result::q_len)
      .def_readonly("kv_len", &g5sim::Result::kv_len)
      .def_readonly("kv_dtype", &g5sim::Result::kv_dtype)
      .def_readonly("mla_mode", &g5sim::Result::mla_mode)
      .def_readonly("prefill_mla_mode", &g5sim::Result::prefill_mla_mode)
      .def_readonly("weight_dtype", &g5sim::Result::weight_dtype)
      .def_readonly("weight_group", &g5sim::Result::weight_group)
      .def_readonly("kv_read_engine", &g5sim::Result::kv_read_engine)
      .def_readonly("attn_split", &g5sim::Result::attn_split)
      .def_readonly("prefill_attention", &g5sim::Result::prefill_attention)
      .def_readonly("kv_append", &g5sim::Result::kv_append)
      .def_readonly("lm_head_weights", &g5sim::Result::lm_head_weights)
      .def_readonly("act_dtype", &g5sim::Result::act_dtype)
      .def_readonly("sequences", &g5sim::Result::sequences,
                    "The step's groups of sequences over all chips (a uniform batch: one).")
      .def_readonly("chip_sequences", &g5sim::Result::chip_sequences,
                    "The groups the simulated chip ran (its DP rank's share).")
      .def_readonly("chip_source", &g5sim::Result::chip_source)
      .def_readonly("chip_sha256", &g5sim::Result::chip_sha256)
      .def_readonly("model_source", &g5sim::Result::model_source)
      .def_readonly("model_sha256", &g5sim::Result::model_sha256)
      .def_readonly("cores", &g5sim::Result::cores)
      .def_readonly("prefetch", &g5sim::Result::prefetch)
      .def_readonly("replay", &g5sim::Result::replay)
      .def_readonly("tp", &g5sim::Result::tp)
      .def_readonly("ep", &g5sim::Result::ep)
      .def_readonly("dp", &g5sim::Result::dp)
      .def_readonly("chips", &g5sim::Result::chips)
      .def_readonly("automatic_sharding", &g5sim::Result::automatic_sharding);
}

// Result's totals: memory, time and its band, throughput, the limiting resource.
void bind_result_totals(py::class_<g5sim::Result>& result) {
  result.def_readonly("weight_bytes", &g5sim::Result::weight_bytes)
      .def_readonly("kv_cache_bytes", &g5sim::Result::kv_cache_bytes)
      .def_readonly("capacity_bytes", &g5sim::Result::capacity_bytes)
      .def_readonly("total_ps", &g5sim::Result::total_ps, "End of the last command, exact integer picoseconds.")
      .def_readonly("runtime", &g5sim::Result::runtime, "The runtime's name ('' for the chip alone).")
      .def_readonly("runtime_version", &g5sim::Result::runtime_version)
      .def_readonly("runtime_source", &g5sim::Result::runtime_source)
      .def_readonly("runtime_sha256", &g5sim::Result::runtime_sha256)
      .def_readonly("runtime_adds", &g5sim::Result::runtime_adds)
      .def_readonly("runtime_parts", &g5sim::Result::runtime_parts, "What the runtime added, by part (ps).")
      .def_readonly("chip_ps", &g5sim::Result::chip_ps, "The chip's time: total_ps less the layer launches.")
      .def_readonly("step_ps", &g5sim::Result::step_ps, "chip_ps + the runtime's charge (total_ps without one).")
      .def_property_readonly(
          "runtime_ps", [](const g5sim::Result& r) { return r.runtime_parts.total_ps(); },
          "The runtime's whole charge, ps (0 for the chip alone).")
      .def_property_readonly("total_ns", &g5sim::Result::total_ns, "total_ps / 1000, as the JSON prints it.")
      .def_readonly("hbm_bytes", &g5sim::Result::hbm_bytes)
      .def_readonly("c2c_bytes", &g5sim::Result::c2c_bytes)
      .def_readonly("flops", &g5sim::Result::flops)
      .def_readonly("command_count", &g5sim::Result::command_count)
      .def_readonly("simulated_commands", &g5sim::Result::simulated_commands,
                    "Of command_count: the commands the event kernel ran.")
      .def_readonly("replayed_commands", &g5sim::Result::replayed_commands,
                    "Of command_count: the commands derived by exact layer replay.")
      .def_readonly("has_band", &g5sim::Result::has_band,
                    "Whether the chip's calibration record gives this run an error band.")
      .def_readonly("band_low_ps", &g5sim::Result::band_low_ps, "The band's lower bound of total_ps (0: no band).")
      .def_readonly("band_high_ps", &g5sim::Result::band_high_ps, "The band's upper bound of total_ps (0: no band).")
      .def_property_readonly(
          "band_low_ns",
          [](const g5sim::Result& r) -> std::optional<double> {
            return r.has_band ? std::optional<double>(r.band_low_ns()) : std::nullopt;
          },
          "The band's lower bound in ns, as the JSON's band_low_ns; None without a band.")
      .def_property_readonly(
          "band_high_ns",
          [](const g5sim::Result& r) -> std::optional<double> {
            return r.has_band ? std::optional<double>(r.band_high_ns()) : std::nullopt;
          },
          "The band's upper bound in ns, as the JSON's band_high_ns; None without a band.")
      .def_readonly("band_coverage", &g5sim::Result::band_coverage,
                    "The share of held-out measurements the band held (0.8), 0 without a band.")
      .def_readonly("band_basis", &g5sim::Result::band_basis,
                    "Which held-out rows stand behind the band, or why there is none.")
      .def_readonly("tokens_per_s", &g5sim::Result::tokens_per_s)
      .def_readonly("tokens_per_s_per_chip", &g5sim::Result::tokens_per_s_per_chip,
                    "tokens_per_s / chips: what one chip of the deployment delivers.")
      .def_readonly("compute_ns", &g5sim::Result::compute_ns)
      .def_readonly("memory_ns", &g5sim::Result::memory_ns)
      .def_readonly("regime", &g5sim::Result::regime)
      .def_readonly("bound_by", &g5sim::Result::bound_by, "The limiting resource over the whole run.")
      .def_readonly("bound_share", &g5sim::Result::bound_share)
      .def_readonly("idle_gap_ps", &g5sim::Result::idle_gap_ps, "The ops' idle gaps summed, ps.")
      .def_readonly("idle_per_core_ps", &g5sim::Result::idle_per_core_ps,
                    "Each core's tensor engine waiting at op boundaries, averaged over the cores, ps.");
}

// Result's energy, on a chip with an `energy` section.
void bind_result_energy(py::class_<g5sim::Result>& result) {
  result.def_readonly("has_energy", &g5sim::Result::has_energy, "The chip has an `energy` section (hw/energy.hpp).")
      .def_readonly("energy_j", &g5sim::Result::energy_j, "The run's energy: dynamic + static, J.")
      .def_readonly("dynamic_energy_j", &g5sim::Result::dynamic_energy_j, "The ops' dynamic energy summed, J.")
      .def_readonly("static_energy_j", &g5sim::Result::static_energy_j, "The chip's static power over the run, J.")
      .def_readonly("average_power_w", &g5sim::Result::average_power_w, "energy / time, W.")
      .def_readonly("tdp_w", &g5sim::Result::tdp_w, "The chip's stated TDP, W (0: not stated).")
      .def_readonly("joules_per_token", &g5sim::Result::joules_per_token,
                    "Energy per token of the chip's share of a step (0 for a block).")
      .def_readonly("tokens_per_joule", &g5sim::Result::tokens_per_joule, "1 / joules_per_token (0 for a block).")
      .def_property_readonly(
          "energy_by_engine",
          [](const g5sim::Result& r) {
            py::dict d;
            for (const g5sim::EngineCommands& e : r.commands) d[py::str(e.engine)] = e.energy_j;
            return d;
          },
          "Dynamic energy per engine, J: the tensor engine's arithmetic, each DMA engine's bytes.");
}

// Result's records: per op, per kind, per engine, per layer, one op by name.
void bind_result_records(py::class_<g5sim::Result>& result) {
  result.def_readonly("ops", &g5sim::Result::ops, "Every op, in emission order (a new list each access).")
      .def_readonly("kinds", &g5sim::Result::kinds, "Per op kind, busiest first.")
      .def_property_readonly(
          "commands",
          [](const g5sim::Result& r) {
            py::dict d;
            for (const g5sim::EngineCommands& e : r.commands) d[py::str(e.engine)] = e.commands;
            return d;
          },
          "Commands per engine, in chip order.")
      .def_readonly("warnings", &g5sim::Result::warnings)
      .def(
          "per_layer_records",
          [](const g5sim::Result& r) {
            py::list out;
            for (const g5sim::LayerRecord& l : r.per_layer()) {
              py::dict d;
              d["layer"] = l.layer < 0 ? py::object(py::none()) : py::object(py::int_(l.layer));
              d["ops"] = l.ops;
              d["start_ns"] = static_cast<double>(l.start_ps) / 1000.0;
              d["end_ns"] = static_cast<double>(l.end_ps) / 1000.0;
              d["span_ns"] = static_cast<double>(l.span_ps()) / 1000.0;
              d["busy_ns"] = static_cast<double>(l.busy_ps) / 1000.0;
              d["start_ps"] = l.start_ps;
              d["end_ps"] = l.end_ps;
              d["hbm_bytes"] = l.hbm_bytes;
              d["flops"] = l.flops;
              out.append(d);
            }
            return out;
          },
          "g5sim::layers_of(ops): one dict per decoder layer, the ops outside the layers (layer None) last.")
      .def(
          "op",
          [](const g5sim::Result& r, const std::string& name, std::optional<int> layer) {
            try {
              return r.op(name, layer);
            } catch (const std::out_of_range& e) {
              throw py::key_error(e.what());
            }
          },
          py::arg("name"), py::arg("layer") = py::none(),
          "The op named `name` (in `layer` if given); KeyError when none, or when several layers have one "
          "and no layer is given.");
}

// Result's identity fields, texts, comparison, hashing, pickling and repr.
void bind_result_methods(py::class_<g5sim::Result>& result) {
  result
      .def(
          "identity",
          [](const g5sim::Result& r) {
            py::dict d;
            for (const g5sim::IdentityField& f : g5sim::run_identity(r)) {
              // A number's digits, or a switch's true / false (the only other non-words).
              if (f.text) {
                d[py::str(f.name)] = py::str(f.value);
              } else if (f.value == "true" || f.value == "false") {
                d[py::str(f.name)] = py::bool_(f.value == "true");
              } else {
                d[py::str(f.name)] = py::int_(std::stoull(f.value));
              }
            }
            return d;
          },
          "What identifies the run in a table of runs (g5sim sweep's first columns): chip, model, the "
          "run-option table's column rows as resolved, chips.")
      .def("json", &g5sim::Result::json, "`g5sim run --json`, byte for byte.")
      .def("table", &g5sim::Result::table, "The table `g5sim run` prints, byte for byte.")
      .def(
          "__eq__", [](const g5sim::Result& a, const g5sim::Result& b) { return a == b; }, py::is_operator(),
          "Every field, the JSON and the table equal: identical runs compare equal.")
      .def(
          "__ne__", [](const g5sim::Result& a, const g5sim::Result& b) { return a != b; }, py::is_operator())
      .def("__hash__", [](const g5sim::Result& r) { return py::hash(py::str(r.json())); })
      .def(py::pickle([](const g5sim::Result& r) { return py::make_tuple(py::bytes(r.saved())); },
                      [](const py::tuple& t) {
                        if (t.size() != 1) throw std::invalid_argument("not a pickled g5sim.Result");
                        return g5sim::Result::restore(t[0].cast<std::string>());
                      }))
      .def("__repr__", [](const g5sim::Result& r) {
        return "<g5sim.Result " + r.model + " " + r.phase + " " + r.scope + " on " + r.chip + ": " +
               std::to_string(r.total_ps) + " ps>";
      });
}

// The module-level runs of a Request: simulate it, or write its Chrome trace.
void bind_request_runs(py::module_& m) {
  m.def(
      "check_deployment_request",
      [](const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& request) {
        g5sim::check_deployment(chip, model, request);
      },
      py::arg("chip"), py::arg("model"), py::arg("request"),
      "Raises what simulate() would say of the request's deployment, without simulating (a sweep's "
      "check of every point before the first runs).");
  m.def(
      "simulate_request",
      [](const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& request, py::object progress) {
        const g5sim::Request mine = request;  // another thread may change the Python object meanwhile
        PythonProgress reporter{progress, std::nullopt};
        std::optional<g5sim::Result> result;
        {
          py::gil_scoped_release release;
          const g5sim::ScopedCancelCheck ctrl_c(&PythonProgress::stop, &reporter);
          std::optional<g5sim::ScopedProgress> told;
          if (!progress.is_none()) told.emplace(&PythonProgress::report, &reporter);
          try {
            result = g5sim::simulate(chip, model, mine);
          } catch (const g5sim::Cancelled&) {
            if (!reporter.failed) throw;
          }
        }
        if (reporter.failed) reporter.failed->restore(), throw py::error_already_set();
        return std::move(*result);
      },
      py::arg("chip"), py::arg("model"), py::arg("request"), py::arg("progress") = py::none(),
      "Simulates a Request (g5sim.simulate() builds it from keywords). Releases the GIL; progress(stage, done, "
      "total), when given, is called with it held.");
  m.def(
      "chrome_trace_request",
      [](const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& request,
         std::optional<std::pair<int, int>> layers) {
        g5sim::Request mine = request;
        mine.keep_commands = true;  // a trace is every command's record
        std::ostringstream out;
        {
          py::gil_scoped_release release;
          const g5sim::ScopedCancelCheck ctrl_c(&python_signal_raised, nullptr);
          g5sim::simulate(chip, model, mine).write_chrome_trace(out, layers);
        }
        return out.str();
      },
      py::arg("chip"), py::arg("model"), py::arg("request"), py::arg("layers") = py::none(),
      "`g5sim run --trace`: the Chrome trace-event JSON of a Request's run (every command simulated), only "
      "decoder layers first..last when `layers` is given. Releases the GIL.");
}

// Result: totals, per op, per kind, per engine.
void bind_result(py::module_& m) {
  py::class_<g5sim::Result> result(m, "Result", "What a run took: totals, per op, per kind, per engine.");
  bind_result_identity(result);
  bind_result_totals(result);
  bind_result_energy(result);
  bind_result_records(result);
  bind_result_methods(result);
  bind_request_runs(m);
}

}  // namespace

PYBIND11_MODULE(_g5sim, m) {
  m.doc() = "g5sim's C++ core. Use the package g5sim, which wraps it.";
  py::register_exception_translator(&translate);

  bind_functions(m);
  bind_chip(m);
  bind_model(m);
  bind_request(m);
  bind_records(m);
  bind_result(m);
  bind_op_runs(m);
}
