package com.example.invoice;

import java.util.ArrayList;
import java.util.List;

/**
 * An invoice: its lines, and a total with a bulk discount of 10% on
 * subtotals of 100.00 or more.
 */
public class Invoice {
    static final long DISCOUNT_THRESHOLD_CENTS = 100_00;
    static final int DISCOUNT_PERCENT = 10;

    private final List<LineItem> lines = new ArrayList<>();

    public Invoice add(LineItem line) {
        lines.add(line);
        return this;
    }

    public List<LineItem> lines() {
        return List.copyOf(lines);
    }

    public long subtotalCents() {
        return lines.stream().mapToLong(LineItem::amountCents).sum();
    }

    public long discountCents() {
        long subtotal = subtotalCents();
        if (subtotal > DISCOUNT_THRESHOLD_CENTS) {
            return subtotal * DISCOUNT_PERCENT / 100;
        }
        return 0;
    }

    public long totalCents() {
        return subtotalCents() - discountCents();
    }
}
