class Account:
    def __init__(self, balance):
        self.balance = balance

    def withdraw(self, amount):
        self.balanse -= amount
        return self.balance
