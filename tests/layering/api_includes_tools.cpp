// Must NOT compile: api/ sits below tools/ (the CLI), so api's include path does not expose it.
#include "tools/output_file.hpp"
