// Must NOT compile: models/ sits below api/, so models's include path does not expose it.
#include "api/report.hpp"
