#include "ring.h"
void Ring::put(int v) { items_.at(next_++) = v; }
int Ring::last() const { return items_.at((next_ + items_.size() - 1) % items_.size()); }
