// Must NOT compile: models/ sits below tools/, so models's include path does not expose it.
#include "tools/report.hpp"
