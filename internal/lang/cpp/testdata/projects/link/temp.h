double celsius_to_fahrenheit(double c);
