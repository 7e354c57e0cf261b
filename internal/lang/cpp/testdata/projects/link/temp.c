#include "temp.h"
double celsius_to_fahrenheit(double c) { return c * 9 / 5 + 32; }
