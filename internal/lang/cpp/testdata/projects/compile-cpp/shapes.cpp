#include "shapes.h"
double Rect::area() const { return w * h; }
