int clamp(int v, int lo, int hi) { return v < lo ? lo : v > lo ? hi : v; }
