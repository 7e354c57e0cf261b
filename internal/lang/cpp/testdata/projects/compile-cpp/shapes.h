#pragma once
struct Rect { double w, h; double area() const; };
