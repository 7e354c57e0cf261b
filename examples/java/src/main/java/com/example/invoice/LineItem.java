package com.example.invoice;

/** One line of an invoice: a product, its unit price in cents and a quantity. */
public record LineItem(String product, long unitCents, int quantity) {
    public LineItem {
        if (unitCents < 0) {
            throw new IllegalArgumentException("negative price for " + product);
        }
        if (quantity <= 0) {
            throw new IllegalArgumentException("quantity must be positive for " + product);
        }
    }

    /** The line's amount in cents. */
    public long amountCents() {
        return unitCents * quantity;
    }
}
