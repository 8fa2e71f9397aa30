// Must NOT compile: api/ (runs) sits below serving/, so api's include path does not expose it.
#include "serving/serve.hpp"
