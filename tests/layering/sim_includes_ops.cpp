// Must NOT compile: sim/ sits below ops/, so sim's include path does not expose it.
#include "ops/op_graph.hpp"
