#include <cassert>
#include "ring.h"
int main() {
    Ring r(3);
    for (int i = 1; i <= 5; i++) r.put(i);
    assert(r.last() == 5);
    return 0;
}
