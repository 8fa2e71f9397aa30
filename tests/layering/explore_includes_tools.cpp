// Must NOT compile: explore/ sits below tools/ (the CLI), so explore's include path does not expose it.
#include "tools/output_file.hpp"
