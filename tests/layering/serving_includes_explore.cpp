// Must NOT compile: serving/ sits below explore/ (search, sensitivity, solve, validation).
#include "explore/sensitivity.hpp"
