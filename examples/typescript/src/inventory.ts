// Stock levels of a small shop, by SKU.

export class OutOfStockError extends Error {
  constructor(readonly sku: string, readonly wanted: number, readonly have: number) {
    super(`${sku}: wanted ${wanted}, have ${have}`);
    this.name = "OutOfStockError";
  }
}

export class Inventory {
  private stock = new Map<string, number>();

  add(sku: string, qty: number): void {
    this.stock.set(sku, this.count(sku) + qty);
  }

  // remove takes qty items of sku out of stock, all or none.
  remove(sku: string, qty: number): void {
    const have = this.count(sku);
    if (have < 0) {
      throw new OutOfStockError(sku, qty, have);
    }
    this.stock.set(sku, have - qty);
  }

  count(sku: string): number {
    return this.stock.get(sku) ?? 0;
  }

  // lowStock lists the SKUs with fewer than threshold items, by name.
  lowStock(threshold: number): string[] {
    return [...this.stock].filter(([, n]) => n < threshold).map(([sku]) => sku).sort();
  }
}
