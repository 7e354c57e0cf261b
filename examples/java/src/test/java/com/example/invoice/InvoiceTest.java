package com.example.invoice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class InvoiceTest {
    @Test
    void smallOrderPaysFullPrice() {
        Invoice invoice = new Invoice()
                .add(new LineItem("pen", 1_50, 4))
                .add(new LineItem("notebook", 3_25, 2));

        assertThat(invoice.subtotalCents()).isEqualTo(12_50);
        assertThat(invoice.totalCents()).isEqualTo(12_50);
    }

    @Test
    void largeOrderGetsTenPercentOff() {
        Invoice invoice = new Invoice().add(new LineItem("chair", 80_00, 2));

        assertThat(invoice.discountCents()).isEqualTo(16_00);
        assertThat(invoice.totalCents()).isEqualTo(144_00);
    }

    @Test
    void discountStartsAtExactlyOneHundred() {
        Invoice invoice = new Invoice().add(new LineItem("desk lamp", 25_00, 4));

        assertThat(invoice.totalCents()).isEqualTo(90_00);
    }

    @Test
    void rejectsZeroQuantity() {
        assertThatThrownBy(() -> new LineItem("pen", 1_50, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("quantity");
    }
}
