#include <cassert>
#include "shapes.h"
int main() {
    Rect r{2, 3};
    assert(r.perimeter() == 10);
    return 0;
}
