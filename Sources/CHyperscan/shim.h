#include <hs/hs.h>
