#pragma once
#include <vector>
class Ring {
public:
    explicit Ring(std::size_t n) : items_(n) {}
    void put(int v);
    int last() const;
private:
    std::vector<int> items_;
    std::size_t next_ = 0;
};
