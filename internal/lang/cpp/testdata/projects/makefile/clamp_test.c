#include <assert.h>
int clamp(int v, int lo, int hi);
int main(void) {
    assert(clamp(5, 0, 10) == 5);
    assert(clamp(-1, 0, 10) == 0);
    return 0;
}
