// Must NOT compile: hw/ sits below sim/, so hw's include path does not expose it.
#include "sim/program.hpp"
