// Must NOT compile: ops/ sits below models/, so ops's include path does not expose it.
#include "models/workload.hpp"
