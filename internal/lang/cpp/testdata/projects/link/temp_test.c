#include "temp.h"
int main(void) { return celsius_to_fahrenheit(100) == 212 ? 0 : 1; }
